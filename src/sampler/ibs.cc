#include "sampler/ibs.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "os/os.h"

namespace sentinel {

bool read_ibs_op_type(const std::string& sysfs_root, uint32_t* type, int* err, std::string* reason) {
  const std::string path = sysfs_root + "/ibs_op/type";
  char buf[32] = {};
  const ssize_t got = os::read_small_file(path.c_str(), buf, sizeof buf);
  if (got < 0) {
    *err = errno;
    const char* name = strerrorname_np(*err);
    *reason = path + ": " + (name != nullptr ? name : "error") + " (" + std::strerror(*err) + "; no AMD IBS op PMU)";
    return false;
  }
  const size_t n = static_cast<size_t>(got);
  char* end = nullptr;
  errno = 0;
  const unsigned long v = std::strtoul(buf, &end, 10);
  if (n == 0 || end == buf || errno != 0 || v > 0xffffffffUL || (*end != '\0' && *end != '\n')) {
    *err = EINVAL;
    *reason = path + ": not a PMU type number";
    return false;
  }
  *type = static_cast<uint32_t>(v);
  return true;
}

uint64_t ibs_op_period(uint64_t requested) {
  if (requested < 16) return 16;
  if (requested > UINT64_MAX - 15) return UINT64_MAX & ~uint64_t{15};
  return (requested + 15) & ~uint64_t{15};
}

bool ibs_raw_access(const uint8_t* raw, uint32_t raw_size, uint64_t* addr, int* is_write) {
  // caps (4 bytes), then registers from IbsOpCtl: IbsOpData3 is register 4, IbsDcLinAd register 5.
  constexpr size_t kData3 = 4 + 4 * 8, kLinAd = 4 + 5 * 8;
  if (raw == nullptr || raw_size < kLinAd + 8) return false;
  uint64_t data3 = 0, lin = 0;
  std::memcpy(&data3, raw + kData3, 8);
  std::memcpy(&lin, raw + kLinAd, 8);
  if ((data3 & (uint64_t{1} << 17)) == 0) return false;
  *addr = lin;
  *is_write = (data3 & 2) != 0 ? 1 : (data3 & 1) != 0 ? 0 : -1;
  return true;
}

}  // namespace sentinel
