// placeholder (issue 4, in progress)
#include <doctest/doctest.h>
