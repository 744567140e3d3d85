/* Reading the slow-tier emulator from inside the two-node guest (docs/slow-tier-emulator.md).
 *
 * When scripts/numa-guest.sh runs with SENTINEL_GUEST_SLOW_TIER=optane|cxl|FILE, a QEMU plugin counts
 * every guest instruction and every cache miss per NUMA node and keeps a virtual clock built from
 * those counts. sentinel_slowtier_read() returns the machine-wide counters and clock at the moment of
 * the call (synchronously: the plugin answers inside the instruction that asks). Take differences
 * between two reads to measure a region, e.g. one training step.
 *
 * Library: libsentinel_slowtier.so (C ABI, no dependencies). Python: tools/qemu-slowtier/slowtier.py.
 * Thread safety: both functions may be called from any thread; calls are serialised internally.
 */
#ifndef SENTINEL_SLOWTIER_H_
#define SENTINEL_SLOWTIER_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SENTINEL_SLOWTIER_MAX_VCPUS 16

struct sentinel_slowtier_counters {
  uint64_t instructions;        /* guest instructions executed, all vCPUs, kernel and user */
  uint64_t virtual_ns;          /* the machine's virtual clock: the latest vCPU clock */
  uint64_t busy_virtual_ns;     /* sum of the vCPU clocks (emulated CPU time) */
  uint64_t fast_read_misses;    /* load misses to node 0 */
  uint64_t fast_write_misses;   /* store misses (write-allocate) to node 0 */
  uint64_t slow_read_misses;    /* load misses to node 1 */
  uint64_t slow_write_misses;   /* store misses to node 1 */
  uint64_t fast_writebacks;     /* dirty lines evicted to node 0 */
  uint64_t slow_writebacks;     /* dirty lines evicted to node 1 */
  uint64_t other_ram_accesses;  /* RAM outside both nodes (firmware ROMs), not charged */
  uint32_t vcpu;                /* vCPU that executed the read */
  uint32_t n_vcpus;             /* entries used in the arrays below */
  uint32_t mailbox_node;        /* node the plugin found the reader's mailbox page on (0 or 1) */
  uint32_t reserved;
  uint64_t vcpu_virtual_ns[SENTINEL_SLOWTIER_MAX_VCPUS];
  uint64_t vcpu_instructions[SENTINEL_SLOWTIER_MAX_VCPUS];
  /* Where the time went (docs/slow-tier-emulator.md, "The model"): */
  uint64_t kernel_instructions;   /* of instructions: those of kernel code (upper-half addresses) */
  uint64_t string_elements;       /* of instructions: rep movs/stos elements, charged by their bytes */
  uint64_t fast_streamed_misses;  /* of the node-0 misses that read a line: a stream's, at bandwidth */
  uint64_t slow_streamed_misses;  /* the same for node 1 */
  uint64_t kernel_fast_misses;    /* node-0 misses (load and store) of kernel code */
  uint64_t kernel_slow_misses;    /* node-1 misses of kernel code */
};

/* Fills *out and returns 0; returns -1 (errno ENODEV) when no slow-tier plugin answered: not in
 * the guest, or the guest runs without SENTINEL_GUEST_SLOW_TIER. */
int sentinel_slowtier_read(struct sentinel_slowtier_counters* out);

/* Same, with a mailbox page the caller provides: 4096 bytes, 4096-aligned, writable and resident.
 * The page's node decides nothing but mailbox_node; used to check the plugin's node layout. */
int sentinel_slowtier_read_with_page(void* page, struct sentinel_slowtier_counters* out);

#ifdef __cplusplus
}
#endif

#endif /* SENTINEL_SLOWTIER_H_ */
