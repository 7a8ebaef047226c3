// Batch preparation for the training loops: arrays checked and converted to what the engine graphs
// take (inputs in the model's dtypes, integer labels as int32, float32 sample weights with
// class_weight applied), and a batch from a DataAdapter made the same way.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tower/core/tensor.h"
#include "tower/layers/engine/data_adapter.h"
#include "tower/layers/layer.h"

namespace tower::engine {

// The samples every array has (their common first dimension); ShapeError naming `where` otherwise.
std::int64_t num_samples(const std::vector<Tensor>& arrays, const std::string& where);
// Rows idx[0..n) of a host array, as a new (n, ...) array.
Tensor take_rows(const Tensor& src, const std::int64_t* idx, std::int64_t n);
// Rows [first, first + count) of `t` (rows, ...), a view of its memory.
Tensor row_range(const Tensor& t, std::int64_t first, std::int64_t count);
// A host copy of `t` converted to `dtype` (Keras casts inputs to the model's dtypes).
Tensor to_dtype(const Tensor& t, DType dtype);
// Inputs in the dtypes of the model's `inputs`; labels as the graph wants them (floats stay, uint8
// class ids become int32).
std::vector<Tensor> prepare_inputs(const std::vector<Tensor>& x, const std::vector<KerasTensor>& inputs);
std::vector<Tensor> prepare_labels(const std::vector<Tensor>& y);
// Sample weights for n samples with labels y: (n,), or one per time step (n, time) when every label
// array is (n, time, ...). Throws ShapeError prefixed with `where` otherwise.
void check_sample_weight(const Tensor& weights, std::int64_t n, const std::vector<Tensor>& y, const std::string& where);
// Multiplies each sample's weight by the class_weight of its label (class ids, or the argmax of
// one-hot rows). weights: (n,) float32, changed in place; labels: (n,) or (n, classes).
void apply_class_weight(const std::map<std::int64_t, double>& class_weight, const Tensor& y, Tensor& weights);
// class_weight's keys must be classes of the model (0 to `classes` - 1; tf.keras's message, which
// tf.keras gives for keys other than 0 to k - 1; gaps are allowed, as in Keras 3, their classes weigh
// 1), and every weight finite and >= 0. Throws ValueError prefixed with `where`.
void check_class_weight(const std::map<std::int64_t, double>& class_weight, std::int64_t classes,
                        const std::string& where);

// A batch as the graph takes it.
struct StepBatch {
  std::vector<Tensor> x, y;
  Tensor sample_weight;  // (size,) float32 (ones when the batch has none); undefined without labels
  std::int64_t size = 0;
};

// Makes StepBatches from a DataAdapter's elements.
class StepBatches {
 public:
  // where: "fit", "evaluate", ...; labels: false for predict; class_weight: applied to batches from
  // datasets (arrays have them in their weights already).
  StepBatches(const std::vector<KerasTensor>& inputs, std::string where, bool labels,
              const std::map<std::int64_t, double>* class_weight = nullptr);
  StepBatch make(const DataElement& element);

 private:
  const std::vector<KerasTensor>& inputs_;
  std::string where_, batch_where_;
  bool labels_;
  const std::map<std::int64_t, double>* class_weight_;
  std::map<std::int64_t, Tensor> ones_;  // sample weights of 1 per batch size
  std::vector<Tensor> all_;              // inputs and labels of the current batch, for num_samples
};

}  // namespace tower::engine
