# What `cmake --install build --prefix P` puts under P, and the Debian package CPack builds from it:
#   bin/sentinel                          the command
#   lib/libsentinel.so                    the runtime (LD_PRELOAD, or linked)
#   include/sentinel/sentinel.h           the public C interface
#   lib/pkgconfig/sentinel.pc             `pkg-config --cflags --libs sentinel`
#   lib/cmake/Sentinel/                   `find_package(Sentinel)`: Sentinel::sentinel, Sentinel::headers
#   lib/python3/dist-packages/sentinel/   the Python module (on Debian's sys.path when P is /usr;
#                                         otherwise PYTHONPATH=P/lib/python3/dist-packages)
#   share/man/man1/sentinel*.1            man pages, generated from the commands' --help by help2man
#
# The library goes to <prefix>/lib, not the multiarch directory: the command finds it at ../lib next
# to itself, and /usr/lib is on the default loader and linker search paths.
include(CMakePackageConfigHelpers)

set(SENTINEL_INSTALL_LIBDIR lib)
set(SENTINEL_INSTALL_CMAKEDIR lib/cmake/Sentinel)
set(SENTINEL_INSTALL_PYTHONDIR lib/python3/dist-packages)

# --- The runtime, the command, the header ---
target_include_directories(sentinel INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:include>)
install(TARGETS sentinel EXPORT SentinelTargets LIBRARY DESTINATION ${SENTINEL_INSTALL_LIBDIR})
install(TARGETS sentinel_cli RUNTIME DESTINATION bin)
install(FILES ${PROJECT_SOURCE_DIR}/include/sentinel/sentinel.h DESTINATION include/sentinel)

# The header alone, for programs that look the functions up at run time (dlsym) and run without
# Sentinel too.
add_library(sentinel_headers INTERFACE)
target_include_directories(sentinel_headers INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:include>)
set_target_properties(sentinel_headers PROPERTIES EXPORT_NAME headers)
install(TARGETS sentinel_headers EXPORT SentinelTargets)

# --- CMake package and pkg-config file (both relocatable: they find the prefix from their own path) ---
install(EXPORT SentinelTargets NAMESPACE Sentinel:: DESTINATION ${SENTINEL_INSTALL_CMAKEDIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/SentinelConfig.cmake.in
  ${PROJECT_BINARY_DIR}/SentinelConfig.cmake INSTALL_DESTINATION ${SENTINEL_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/SentinelConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/SentinelConfig.cmake ${PROJECT_BINARY_DIR}/SentinelConfigVersion.cmake
  DESTINATION ${SENTINEL_INSTALL_CMAKEDIR})
configure_file(${CMAKE_CURRENT_LIST_DIR}/sentinel.pc.in ${PROJECT_BINARY_DIR}/sentinel.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/sentinel.pc DESTINATION ${SENTINEL_INSTALL_LIBDIR}/pkgconfig)

# --- Python module: configured into the build tree (tests import it from there), installed as is ---
set(SENTINEL_PYTHON_DIR ${PROJECT_BINARY_DIR}/python)
configure_file(${PROJECT_SOURCE_DIR}/python/sentinel/__init__.py.in ${SENTINEL_PYTHON_DIR}/sentinel/__init__.py @ONLY)
install(DIRECTORY ${SENTINEL_PYTHON_DIR}/sentinel DESTINATION ${SENTINEL_INSTALL_PYTHONDIR}
  PATTERN __pycache__ EXCLUDE)

# --- Man pages: help2man turns each command's --help into a page; docs/man/*.h2m add the prose ---
find_program(HELP2MAN help2man)
if(HELP2MAN)
  set(man_pages "")
  # page, help option, one-line description
  set(man_specs
    "sentinel|--help|place the data objects of a DNN training program on fast and slow memory"
    "sentinel-run|run --help|run a program under Sentinel and summarise what it saw"
    "sentinel-profile|profile --help|record an access profile of a training program's first steps"
    "sentinel-profile-diff|profile-diff --help|score a profile against a ground-truth profile of the same program")
  if(TARGET sentinel_plan)
    list(APPEND man_specs "sentinel-replay|replay --help|model a recorded profile under every placement policy")
  endif()
  if(TARGET sentinel_report)
    list(APPEND man_specs "sentinel-report|report --help|an HTML report of a profile, a run and its replay")
  endif()
  if(TARGET sentinel_topo)
    list(APPEND man_specs "sentinel-topology|topology --help|show the NUMA nodes and the fast and slow tier")
  endif()
  foreach(spec IN LISTS man_specs)
    string(REPLACE "|" ";" parts "${spec}")
    list(GET parts 0 page)
    list(GET parts 1 help_option)
    list(GET parts 2 description)
    set(out ${PROJECT_BINARY_DIR}/man/${page}.1)
    add_custom_command(OUTPUT ${out}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/man
      COMMAND ${HELP2MAN} --no-info --no-discard-stderr "--version-string=${page} ${PROJECT_VERSION}"
              "--help-option=${help_option}" "--name=${description}"
              --include=${PROJECT_SOURCE_DIR}/docs/man/${page}.h2m --output=${out} $<TARGET_FILE:sentinel_cli>
      DEPENDS sentinel_cli ${PROJECT_SOURCE_DIR}/docs/man/${page}.h2m
      COMMENT "Generating man page ${page}(1)" VERBATIM)
    list(APPEND man_pages ${out})
  endforeach()
  add_custom_target(sentinel_man ALL DEPENDS ${man_pages})
  install(FILES ${man_pages} DESTINATION share/man/man1)
else()
  message(WARNING "help2man not found: no man pages (scripts/install-deps.sh installs it)")
endif()

# --- Debian package: `cpack -G DEB --config build/CPackConfig.cmake` ---
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME sentinel)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "tiered-memory runtime for DNN training (LD_PRELOAD)")
set(CPACK_PACKAGE_DESCRIPTION
  "Sentinel places the tensors of an unmodified training program on fast DRAM and a slow CPU-less
NUMA node (CXL memory, persistent memory): it profiles the first training steps and plans where
each object lives and when it moves. Includes the sentinel command, libsentinel.so, the C header,
pkg-config and CMake files, man pages and a Python module.")
set(CPACK_PACKAGE_CONTACT "Sentinel developers <sentinel@invalid>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # Depends from the libraries the binaries link (dpkg-shlibdeps)
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "python3")
# Python writes __pycache__ next to the module when root imports it; prerm removes it so that
# `dpkg -r` leaves no directory behind.
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${CMAKE_CURRENT_LIST_DIR}/debian/prerm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
