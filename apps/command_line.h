// What the command-line programs share: the usage error, and parsing with --help.
#pragma once

#include <boost/program_options.hpp>

#include <iostream>
#include <stdexcept>

namespace tower::apps {

// A bad command line: the program prints the message with a hint and exits with code 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Parses argv into `options`' variables. With --help (which `options` must define), prints the
// options and returns false: the program then exits with 0. Boost's own errors propagate.
inline bool parse_command_line(const boost::program_options::options_description& options, int argc, char** argv) {
  namespace po = boost::program_options;
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, options), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << options << "\n";
    return false;
  }
  return true;
}

}  // namespace tower::apps
