// TensorFlow event files (events.out.tfevents.*) written and read by hand: TFRecord framing with
// masked CRC-32C, and Event/Summary protobufs encoded field by field (no TensorFlow, no protobuf).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace tower::io {

// CRC-32C (Castagnoli), table-driven; `crc` continues a previous value. crc32c("123456789") = 0xE3069283.
std::uint32_t crc32c(const void* data, std::size_t size, std::uint32_t crc = 0);
// TFRecord's masking: rotate right by 15, then add 0xa282ead8.
std::uint32_t mask_crc32c(std::uint32_t crc);
std::uint32_t unmask_crc32c(std::uint32_t masked);

// Appends summaries to one event file, as tf.summary's file writer does: the first record is
// Event{file_version: "brain.Event:2"}; scalars are float32 tensor summaries with the "scalars" plugin
// (what Keras 3 writes and TensorBoard reads as scalars); histograms are the "histograms" plugin's
// (k, 3) float64 tensors of [left, right, count]. Movable, not copyable; the destructor closes.
class EventWriter {
 public:
  // Creates `directory` (and parents) and events.out.tfevents.<seconds>.<host>.<pid>.<n>.v2 in it.
  explicit EventWriter(const std::string& directory);
  ~EventWriter();
  EventWriter(EventWriter&& other) noexcept;
  EventWriter& operator=(EventWriter&& other) noexcept;
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  void add_scalar(const std::string& tag, double value, std::int64_t step);
  // TensorBoard's histogram_v2 buckets: `bucket_count` equal-width buckets from min to max (all in the
  // last one when every value is equal; zero rows of zeros for no values).
  void add_histogram(const std::string& tag, const std::vector<double>& values, std::int64_t step,
                     int bucket_count = 30);
  // The "graph_keras_model" summary (a model's to_json()) that TensorBoard's graph tab draws.
  void add_keras_model(const std::string& tag, const std::string& json, std::int64_t step);

  void flush();
  void close();
  const std::string& path() const { return path_; }

 private:
  void write_event(const std::string& event);  // one serialized Event, framed and written
  std::string path_;
  std::FILE* file_ = nullptr;
};

// ---- reading back (tests, tools) ------------------------------------------------------------------

// The records of a TFRecord file; throws tower::Error on a truncated record or a CRC mismatch.
std::vector<std::string> read_tfrecords(const std::string& path);

struct EventValue {
  std::string tag;
  std::string plugin_name;
  int data_class = 0;
  int dtype = 0;                    // TensorProto dtype (1 float, 2 double, 7 string); 0 for simple_value
  std::vector<std::int64_t> shape;  // the tensor's
  std::vector<double> numbers;      // simple_value, or the tensor's float/double elements
  std::vector<std::string> strings;
};

struct Event {
  double wall_time = 0;
  std::int64_t step = 0;
  std::string file_version;
  std::vector<EventValue> values;
};

// Decodes the events of one file (fields tower does not write are skipped).
std::vector<Event> read_events(const std::string& path);

}  // namespace tower::io
