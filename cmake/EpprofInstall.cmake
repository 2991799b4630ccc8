# Installation and the find_package(epprof) package:
#   <prefix>/include/epprof/*.h             public C headers
#   <prefix>/<libdir>/libepprof.*           the library (exported as epprof::epprof)
#   <prefix>/<libdir>/libepprof_example.so  the example EP profiler plugin
#   <prefix>/bin/epprof                     the command line
#   <prefix>/<libdir>/cmake/epprof/         epprofConfig.cmake, epprofConfigVersion.cmake,
#                                           epprofTargets.cmake
# Every part is guarded, so configuring works while a target is missing.
include(CMakePackageConfigHelpers)

set(EPPROF_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/epprof"
    CACHE STRING "Where the epprof CMake package files are installed")

# Installed binaries find libepprof in <prefix>/<libdir>.
file(RELATIVE_PATH _epprof_bin_to_lib
     "${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}" "${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}")

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/epprof
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        COMPONENT devel
        FILES_MATCHING PATTERN "*.h")

if(TARGET epprof)
  # A static libepprof carries its private dependencies into the package.
  get_target_property(_epprof_type epprof TYPE)
  if(_epprof_type STREQUAL "STATIC_LIBRARY")
    set(EPPROF_PACKAGE_STATIC TRUE)
  else()
    set(EPPROF_PACKAGE_STATIC FALSE)
  endif()

  install(TARGETS epprof
          EXPORT epprofTargets
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime
                  NAMELINK_COMPONENT devel
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT devel
          RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime
          INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(EXPORT epprofTargets
          NAMESPACE epprof::
          FILE epprofTargets.cmake
          DESTINATION ${EPPROF_INSTALL_CMAKEDIR}
          COMPONENT devel)

  configure_package_config_file(
    ${CMAKE_CURRENT_LIST_DIR}/epprofConfig.cmake.in
    ${PROJECT_BINARY_DIR}/epprofConfig.cmake
    INSTALL_DESTINATION ${EPPROF_INSTALL_CMAKEDIR}
    PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_LIBDIR)
  write_basic_package_version_file(
    ${PROJECT_BINARY_DIR}/epprofConfigVersion.cmake
    VERSION ${PROJECT_VERSION}
    COMPATIBILITY SameMajorVersion)
  install(FILES ${PROJECT_BINARY_DIR}/epprofConfig.cmake
                ${PROJECT_BINARY_DIR}/epprofConfigVersion.cmake
          DESTINATION ${EPPROF_INSTALL_CMAKEDIR}
          COMPONENT devel)
else()
  message(STATUS "epprof: target epprof is missing; the library and its CMake package are not installed")
endif()

if(TARGET epprof_cli)
  set_target_properties(epprof_cli PROPERTIES INSTALL_RPATH "$ORIGIN/${_epprof_bin_to_lib}")
  install(TARGETS epprof_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
endif()

if(TARGET epprof_example_plugin)
  # Next to libepprof, where `epprof demo` looks for it (<bindir>/../<libdir>).
  install(TARGETS epprof_example_plugin LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime)
endif()

# EP plugins next to libepprof, where `epprof run --ep <name>` looks for them.
foreach(_ep_plugin IN ITEMS epprof_opencl_ep epprof_cuda_ep)
  if(TARGET ${_ep_plugin})
    install(TARGETS ${_ep_plugin} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime)
  endif()
endforeach()

# The bundled models, where `epprof run` looks for its default model.
if(TARGET epprof_models)
  install(DIRECTORY ${EPPROF_MODELS_DIR}/ DESTINATION ${CMAKE_INSTALL_DATADIR}/epprof/models
          COMPONENT runtime FILES_MATCHING PATTERN "*.onnx")
endif()
