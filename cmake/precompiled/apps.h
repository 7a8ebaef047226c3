// The programs' precompiled header (TOWER_PCH, apps/CMakeLists.txt): all of tower's public API and
// Boost.Program_options, parsed once for every program in apps/ instead of once each.
#pragma once

#include <boost/program_options.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "tower/tower.h"
