# fl_symsvc: the symbol services the server's worker and endpoints call --
# locating debug files by build id (upload dirs, /usr/lib/debug,
# debuginfod, the object itself), the server-side CFI unwind with libdwfl,
# and the XML symbolication request/response.  See
# docs/symbolication-server.md.  Included from CMakeLists.txt of this
# directory so that it can extend fl_symbols without editing its list.
pkg_check_modules(SVC_DEPS REQUIRED IMPORTED_TARGET libdw libelf libdebuginfod libxml-2.0 libpcre2-8)
find_package(Threads REQUIRED)

add_library(fl_symsvc STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/locate.c
  ${CMAKE_CURRENT_SOURCE_DIR}/remote_unwind.c
  ${CMAKE_CURRENT_SOURCE_DIR}/xmlsym.c)
target_include_directories(fl_symsvc PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(fl_symsvc PUBLIC fl_symbols fl_common PkgConfig::SVC_DEPS Threads::Threads)
