// The library's precompiled header (TOWER_PCH, CMakeLists.txt): what nearly every library file includes
// and what costs most to parse. The C++20 standard headers, fmt and nlohmann/json alone take about
// 3.5 s of a 5.5 s layer file on the CI VM; parsed once per build instead of once per file.
// Only headers that rarely change belong here: a change to one of them rebuilds every file.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "tower/core/ops.h"
#include "tower/layers/layer.h"
#include "tower/layers/layer_config.h"
