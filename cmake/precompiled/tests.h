// The test suites' precompiled header (TOWER_PCH, tests/CMakeLists.txt): doctest, all of tower's public
// API (tower.h) and the test helpers most suites include. Parsing these is about 6 s of a test file's
// 7 s front end; every suite reuses the one built for tower_test_support. Files that define
// DOCTEST_CONFIG_IMPLEMENT* before including doctest skip it (SKIP_PRECOMPILE_HEADERS).
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tower/core/autodiff.h"
#include "tower/core/executor.h"
#include "tower/core/ops.h"
#include "tower/tower.h"
#include "tests/support/errors.h"
#include "tests/support/grad_check.h"
