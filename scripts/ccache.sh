#!/usr/bin/env bash
# Sourced by the build scripts (build.sh, asan_tree.sh, tsan.sh): ccache as the compiler launcher when installed,
# keyed by paths relative to the checkout (CCACHE_BASEDIR, CCACHE_NOHASHDIR) so that a second clone on
# the same machine reuses the first one's objects, and with the sloppiness that lets it cache files
# compiled with the precompiled headers (cmake/precompiled/). CCACHE_DISABLE=1 still turns it off.
ccache_launcher=()
if command -v ccache >/dev/null; then
  ccache_launcher=("-DCMAKE_CXX_COMPILER_LAUNCHER=env;CCACHE_BASEDIR=$PWD;CCACHE_NOHASHDIR=1;CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime;ccache")
fi
