// What the command-line programs share: the usage error, and parsing with --help.
#pragma once

#include <boost/program_options.hpp>

#include <iostream>
#include <stdexcept>
#include <string>

namespace tower::apps {

// A bad command line: the program prints the message with a hint and exits with code 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Parses argv for `options` into vm (po::parse_command_line and po::store), refusing what Boost lets
// pass: a positional argument (no program here takes one; Boost ignores it) and an option given an
// empty value (--data "" would mean the default data, --save "" no save at all, without a word).
// Throws po::error, which every program prints with its options and exits 2 for.
inline void store_command_line(const boost::program_options::options_description& options, int argc, char** argv,
                               boost::program_options::variables_map& vm) {
  namespace po = boost::program_options;
  const po::parsed_options parsed = po::parse_command_line(argc, argv, options);
  for (const auto& o : parsed.options) {
    if (o.string_key.empty() || o.position_key >= 0) {
      const std::string token = o.original_tokens.empty() ? std::string() : o.original_tokens.front();
      throw po::error("unexpected argument \"" + token + "\": the options take the form --name value (a value "
                      "with spaces in quotes), and none stands alone");
    }
    for (const auto& v : o.value)
      if (v.empty())
        throw po::error("--" + o.string_key + " \"\": the value is empty; give one, or leave --" + o.string_key +
                        " out");
  }
  po::store(parsed, vm);
}

// Parses argv into `options`' variables (store_command_line). With --help (which `options` must
// define), prints the options and returns false: the program then exits with 0. Boost's errors, and
// store_command_line's, propagate as po::error.
inline bool parse_command_line(const boost::program_options::options_description& options, int argc, char** argv) {
  namespace po = boost::program_options;
  po::variables_map vm;
  store_command_line(options, argc, argv, vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << options << "\n";
    return false;
  }
  return true;
}

}  // namespace tower::apps
