// utils::plot_history: the curves of a History (loss and each metric per epoch, train and val_) as a PNG,
// drawn with cairo, for a person who would rather look than read the logs.
#pragma once

#include <string>
#include <vector>

namespace tower {
class History;
}

namespace tower::utils {

struct PlotHistoryOptions {
  int width = 800;                // pixels
  int height = 0;                 // pixels; 0: 300 per panel
  std::vector<std::string> keys;  // the quantities, one panel each ("loss", "accuracy"); empty: "loss",
                                  // then every other quantity that is not a "val_" one, by name
  std::string title;              // a line above the first panel; empty: none
};

// One panel per quantity: its training curve and, when the history has it, its "val_" curve, against the
// epoch (1-based, as Keras's progress bar counts), with ticks, axis labels and a legend; written to `path`
// (a PNG, through a temporary file renamed over it). Throws ValueError for an empty history, a key it does
// not hold (listing those it holds) or a size out of 64..8192 pixels (per panel: at least 120 high), and
// Error when tower was built without cairo (install libcairo2-dev, e.g. scripts/install_deps.sh, and
// rebuild) or the file cannot be written.
void plot_history(const History& history, const std::string& path, const PlotHistoryOptions& options = {});

// Whether this build of tower can draw (it found cairo).
bool plot_history_available();

}  // namespace tower::utils
