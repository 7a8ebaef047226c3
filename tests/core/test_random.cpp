// placeholder until written
#include <doctest/doctest.h>
