// Callback's model access and History.
#include "tower/layers/callbacks/callback.h"

#include "tower/core/error.h"

namespace tower {

Model& Callback::model() const {
  if (!model_)
    raise<ValueError>(
        "Callback: model() was called before the callback was attached to a model "
        "(pass it in fit's, evaluate's or predict's `callbacks`, or call set_model)");
  return *model_;
}

// As Keras: the epochs restart with each fit, the history accumulates.
void History::on_train_begin(const Logs&) { epoch.clear(); }

void History::on_epoch_end(int epoch_index, Logs& logs) {
  epoch.push_back(epoch_index);
  for (const auto& [name, value] : logs.entries()) history[name].push_back(value);
}

void History::plot(const std::string& path, const utils::PlotHistoryOptions& options) const {
  utils::plot_history(*this, path, options);
}

}  // namespace tower
