# Install rules: libtower, its public headers under include/tower/, the CMake package (tower::tower,
# towerConfig.cmake, towerConfigVersion.cmake) and tower.pc. docs/using-tower.md is the user's side.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TOWER_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/tower CACHE STRING "Where towerConfig.cmake is installed")
mark_as_advanced(TOWER_INSTALL_CMAKEDIR)

# --- headers --------------------------------------------------------------------------------------
# Every library header, at its path in this tree, except the private ones: *_internal.h, and in
# backends/ everything but the devices a user may name (the kernels' plumbing: launchers, kernel
# tables, strided views, .cuh). The CUDA backend's headers only in a CUDA build. The consumer test
# (cmake/TowerConsumerTest.cmake) checks that no installed header includes one left out, and compiles
# all of them against the installed tree.
file(GLOB_RECURSE tower_public_headers CONFIGURE_DEPENDS RELATIVE ${PROJECT_SOURCE_DIR}
     ${PROJECT_SOURCE_DIR}/core/*.h ${PROJECT_SOURCE_DIR}/backends/*.h ${PROJECT_SOURCE_DIR}/layers/*.h
     ${PROJECT_SOURCE_DIR}/optimizers/*.h ${PROJECT_SOURCE_DIR}/parallel/*.h ${PROJECT_SOURCE_DIR}/io/*.h)
list(APPEND tower_public_headers tower.h)
list(FILTER tower_public_headers EXCLUDE REGEX "_internal\\.h$")
set(tower_public_backend_headers "^backends/cpu/cpu_device\\.h$")
if(TOWER_WITH_CUDA)
  string(APPEND tower_public_backend_headers
         "|^backends/cuda/(cuda_backend|cuda_check|cuda_device|cudnn_conv_plan|event_tagged_blocks|pinned_host_device)\\.h$")
endif()
set(tower_backend_headers ${tower_public_headers})
list(FILTER tower_backend_headers INCLUDE REGEX "^backends/")
list(FILTER tower_backend_headers EXCLUDE REGEX "${tower_public_backend_headers}")
if(tower_backend_headers)
  list(REMOVE_ITEM tower_public_headers ${tower_backend_headers})
endif()
foreach(header IN LISTS tower_public_headers)
  get_filename_component(dir ${header} DIRECTORY)
  install(FILES ${header} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tower/${dir} COMPONENT tower_development)
endforeach()

# --- the library and its CMake package ------------------------------------------------------------
# A shared libtower keeps the rpath to its non-system libraries (the CUDA toolkit's lib/, for one).
set_target_properties(tower PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
install(TARGETS tower EXPORT towerTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT tower_development
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT tower_runtime NAMELINK_COMPONENT tower_development
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tower_runtime)
install(EXPORT towerTargets NAMESPACE tower:: DESTINATION ${TOWER_INSTALL_CMAKEDIR} COMPONENT tower_development)

# What towerConfig.cmake must find again: the PUBLIC dependencies always; the PRIVATE ones of a static
# libtower too (its link interface names them as $<LINK_ONLY:...>); CUDAToolkit in a CUDA build.
get_target_property(tower_library_type tower TYPE)
if(tower_library_type STREQUAL "STATIC_LIBRARY")
  set(TOWER_STATIC ON)
else()
  set(TOWER_STATIC OFF)
endif()
set(TOWER_NCCL_HEADER OFF)
if(TOWER_WITH_CUDA AND TOWER_NCCL_INCLUDE_DIR)
  set(TOWER_NCCL_HEADER ON)
endif()
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/towerConfig.cmake.in
                              ${CMAKE_CURRENT_BINARY_DIR}/towerConfig.cmake
                              INSTALL_DESTINATION ${TOWER_INSTALL_CMAKEDIR} NO_SET_AND_CHECK_MACRO)
# 0.x: SameMajorVersion, as asked; an API break before 1.0 bumps the minor version and says so.
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/towerConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/towerConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/towerConfigVersion.cmake
        DESTINATION ${TOWER_INSTALL_CMAKEDIR} COMPONENT tower_development)

# --- pkg-config -----------------------------------------------------------------------------------
# Relocatable (${pcfiledir}): `cmake --install --prefix P` may pick another prefix than configure did.
# A static libtower has no DT_NEEDED entries, so its private libraries go into Requires/Libs (what a
# plain `pkg-config --libs tower` prints); a shared one keeps them in Requires.private.
file(RELATIVE_PATH TOWER_PC_PREFIX_FROM_PCDIR /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" TOWER_PC_PREFIX_FROM_PCDIR "${TOWER_PC_PREFIX_FROM_PCDIR}")
set(TOWER_PC_REQUIRES "fmt nlohmann_json")
set(TOWER_PC_REQUIRES_PRIVATE "openblas hdf5 zlib")
if(TOWER_WITH_MPI)
  string(APPEND TOWER_PC_REQUIRES_PRIVATE " mpi-c")
endif()
if(TOWER_WITH_CAIRO)
  string(APPEND TOWER_PC_REQUIRES_PRIVATE " cairo")
endif()
set(TOWER_PC_CFLAGS "")
set(TOWER_PC_LIBS "-pthread")
if(TOWER_WITH_ONEDNN AND TOWER_STATIC)
  string(APPEND TOWER_PC_LIBS " -ldnnl -lgomp")  # oneDNN ships no pkg-config module
endif()
if(TOWER_STATIC)
  string(APPEND TOWER_PC_REQUIRES " ${TOWER_PC_REQUIRES_PRIVATE}")
  set(TOWER_PC_REQUIRES_PRIVATE "")
endif()
if(TOWER_WITH_CUDA)
  string(APPEND TOWER_PC_CFLAGS " -DTOWER_WITH_CUDA")
  foreach(dir IN LISTS CUDAToolkit_INCLUDE_DIRS)
    string(APPEND TOWER_PC_CFLAGS " -I${dir}")
  endforeach()
  get_filename_component(tower_cudnn_dir ${TOWER_CUDNN_LIBRARY} DIRECTORY)
  string(APPEND TOWER_PC_LIBS " -L${CUDAToolkit_LIBRARY_DIR} -Wl,-rpath,${CUDAToolkit_LIBRARY_DIR}")
  if(NOT tower_cudnn_dir STREQUAL CUDAToolkit_LIBRARY_DIR)
    string(APPEND TOWER_PC_LIBS " -L${tower_cudnn_dir} -Wl,-rpath,${tower_cudnn_dir}")
  endif()
  string(APPEND TOWER_PC_LIBS " -lcudnn -lcublasLt -lcublas -lcudart")
  if(TOWER_STATIC AND TOWER_NCCL_HEADER AND CMAKE_DL_LIBS)
    string(APPEND TOWER_PC_LIBS " -l${CMAKE_DL_LIBS}")  # NCCL is dlopen'ed
  endif()
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/tower.pc.in ${CMAKE_CURRENT_BINARY_DIR}/tower.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/tower.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
        COMPONENT tower_development)
