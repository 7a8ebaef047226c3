// TensorFlow event files by hand: CRC-32C, TFRecord framing, the few protobuf messages of an Event.
#include "tower/io/tfevents.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <utility>

#include "tower/core/error.h"

namespace tower::io {

namespace {

constexpr std::array<std::uint32_t, 256> make_crc_table() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;  // reflected Castagnoli
    table[i] = c;
  }
  return table;
}
constexpr auto kCrcTable = make_crc_table();

// ---- protobuf wire format: only what Event, Summary and TensorProto need ----

void put_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void put_tag(std::string& out, int field, int wire) { put_varint(out, (static_cast<std::uint64_t>(field) << 3) | wire); }
void put_uint(std::string& out, int field, std::uint64_t v) {
  put_tag(out, field, 0);
  put_varint(out, v);
}
void put_bytes(std::string& out, int field, const std::string& bytes) {
  put_tag(out, field, 2);
  put_varint(out, bytes.size());
  out += bytes;
}
template <typename T>
void put_le(std::string& out, T value) {  // little-endian, as protobuf and TFRecord (hosts are little-endian)
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}
void put_double(std::string& out, int field, double v) {
  put_tag(out, field, 1);
  put_le(out, v);
}

constexpr int kDtFloat = 1, kDtDouble = 2, kDtString = 7;
constexpr int kDataClassScalar = 1, kDataClassTensor = 2, kDataClassBlobSequence = 3;

// SummaryMetadata{plugin_data{plugin_name, content}, data_class}
std::string metadata(const std::string& plugin, const std::string& content, int data_class) {
  std::string plugin_data;
  put_bytes(plugin_data, 1, plugin);
  if (!content.empty()) put_bytes(plugin_data, 2, content);
  std::string m;
  put_bytes(m, 1, plugin_data);
  put_uint(m, 4, static_cast<std::uint64_t>(data_class));
  return m;
}

// TensorShapeProto{dim{size}...}
std::string shape_proto(const std::vector<std::int64_t>& dims) {
  std::string s;
  for (auto d : dims) {
    std::string dim;
    put_uint(dim, 1, static_cast<std::uint64_t>(d));
    put_bytes(s, 2, dim);
  }
  return s;
}

// Summary{value{tag, tensor, metadata}}
std::string summary_value(const std::string& tag, const std::string& tensor, const std::string& meta) {
  std::string value;
  put_bytes(value, 1, tag);
  put_bytes(value, 8, tensor);
  put_bytes(value, 9, meta);
  std::string summary;
  put_bytes(summary, 1, value);
  return summary;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string event(std::int64_t step, const std::string* file_version, const std::string* summary) {
  std::string e;
  put_double(e, 1, now_seconds());
  if (step != 0) put_uint(e, 2, static_cast<std::uint64_t>(step));
  if (file_version) put_bytes(e, 3, *file_version);
  if (summary) put_bytes(e, 5, *summary);
  return e;
}

// A reader over one message's bytes.
struct Fields {
  const std::string& data;
  std::size_t pos = 0;
  int field = 0, wire = 0;
  std::uint64_t number = 0;  // varint, fixed64 or fixed32 bits
  std::string bytes;

  [[noreturn]] void bad() const { throw Error("tfevents: malformed protobuf in an event record"); }
  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos >= data.size()) bad();
      const auto b = static_cast<unsigned char>(data[pos++]);
      v |= static_cast<std::uint64_t>(b & 0x7F) << shift;
      if (!(b & 0x80)) return v;
    }
    bad();
  }
  bool next() {
    if (pos >= data.size()) return false;
    const std::uint64_t key = varint();
    field = static_cast<int>(key >> 3);
    wire = static_cast<int>(key & 7);
    if (wire == 0) {
      number = varint();
    } else if (wire == 1 || wire == 5) {
      const std::size_t n = wire == 1 ? 8 : 4;
      if (data.size() - pos < n) bad();
      number = 0;
      std::memcpy(&number, data.data() + pos, n);
      pos += n;
    } else if (wire == 2) {
      const std::uint64_t n = varint();
      if (data.size() - pos < n) bad();
      bytes.assign(data, pos, n);
      pos += n;
    } else {
      bad();
    }
    return true;
  }
  double as_double() const {
    double d;
    std::memcpy(&d, &number, 8);
    return d;
  }
  float as_float() const {
    std::uint32_t bits = static_cast<std::uint32_t>(number);
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
};

void read_tensor(const std::string& data, EventValue& v) {
  std::string content;
  std::vector<double> floats, doubles;
  for (Fields f{data}; f.next();) {
    if (f.field == 1) v.dtype = static_cast<int>(f.number);
    if (f.field == 2)
      for (Fields s{f.bytes}; s.next();)
        if (s.field == 2)
          for (Fields d{s.bytes}; d.next();)
            if (d.field == 1) v.shape.push_back(static_cast<std::int64_t>(d.number));
    if (f.field == 4) content = f.bytes;
    if (f.field == 5 && f.wire == 5) floats.push_back(f.as_float());
    if (f.field == 5 && f.wire == 2)
      for (std::size_t i = 0; i + 4 <= f.bytes.size(); i += 4) {
        float x;
        std::memcpy(&x, f.bytes.data() + i, 4);
        floats.push_back(x);
      }
    if (f.field == 6 && f.wire == 1) doubles.push_back(f.as_double());
    if (f.field == 8) v.strings.push_back(f.bytes);
  }
  if (v.dtype == kDtFloat) {
    for (std::size_t i = 0; i + 4 <= content.size(); i += 4) {
      float x;
      std::memcpy(&x, content.data() + i, 4);
      v.numbers.push_back(x);
    }
    v.numbers.insert(v.numbers.end(), floats.begin(), floats.end());
  } else if (v.dtype == kDtDouble) {
    for (std::size_t i = 0; i + 8 <= content.size(); i += 8) {
      double x;
      std::memcpy(&x, content.data() + i, 8);
      v.numbers.push_back(x);
    }
    v.numbers.insert(v.numbers.end(), doubles.begin(), doubles.end());
  }
}

EventValue read_value(const std::string& data) {
  EventValue v;
  for (Fields f{data}; f.next();) {
    if (f.field == 1) v.tag = f.bytes;
    if (f.field == 2 && f.wire == 5) v.numbers.push_back(f.as_float());  // simple_value
    if (f.field == 8) read_tensor(f.bytes, v);
    if (f.field == 9)
      for (Fields m{f.bytes}; m.next();) {
        if (m.field == 1)
          for (Fields p{m.bytes}; p.next();)
            if (p.field == 1) v.plugin_name = p.bytes;
        if (m.field == 4) v.data_class = static_cast<int>(m.number);
      }
  }
  return v;
}

}  // namespace

std::uint32_t crc32c(const void* data, std::size_t size, std::uint32_t crc) {
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (std::size_t i = 0; i < size; ++i) crc = kCrcTable[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

std::uint32_t mask_crc32c(std::uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

std::uint32_t unmask_crc32c(std::uint32_t masked) {
  const std::uint32_t rot = masked - 0xa282ead8u;
  return (rot >> 17) | (rot << 15);
}

// ---- EventWriter ----------------------------------------------------------------------------------

EventWriter::EventWriter(const std::string& directory) {
  static std::atomic<int> counter{0};
  std::error_code ec;
  std::filesystem::create_directories(directory, ec);
  if (ec)
    throw Error("TensorBoard: cannot create the log directory \"" + directory + "\": " + ec.message() +
                "; choose a writable log_dir");
  char host[256] = "localhost";
  if (gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "localhost");
  host[sizeof host - 1] = '\0';
  const auto seconds = static_cast<std::int64_t>(now_seconds());
  path_ = (std::filesystem::path(directory) / ("events.out.tfevents." + std::to_string(seconds) + "." + host + "." +
                                               std::to_string(getpid()) + "." + std::to_string(counter++) + ".v2"))
              .string();
  file_ = std::fopen(path_.c_str(), "wb");
  if (!file_) throw Error("TensorBoard: cannot open \"" + path_ + "\" for writing; choose a writable log_dir");
  const std::string version = "brain.Event:2";
  write_event(event(0, &version, nullptr));
  flush();
}

EventWriter::~EventWriter() {
  try {
    close();
  } catch (...) {
  }
}

EventWriter::EventWriter(EventWriter&& other) noexcept
    : path_(std::move(other.path_)), file_(std::exchange(other.file_, nullptr)) {}

EventWriter& EventWriter::operator=(EventWriter&& other) noexcept {
  if (this != &other) {
    try {
      close();
    } catch (...) {
    }
    path_ = std::move(other.path_);
    file_ = std::exchange(other.file_, nullptr);
  }
  return *this;
}

void EventWriter::write_event(const std::string& e) {
  if (!file_) throw Error("TensorBoard: event file \"" + path_ + "\" is closed");
  std::string record;
  const std::uint64_t length = e.size();
  put_le(record, length);
  put_le(record, mask_crc32c(crc32c(record.data(), 8)));
  record += e;
  put_le(record, mask_crc32c(crc32c(e.data(), e.size())));
  if (std::fwrite(record.data(), 1, record.size(), file_) != record.size())
    throw Error("TensorBoard: writing \"" + path_ + "\" failed (disk full?)");
}

void EventWriter::add_scalar(const std::string& tag, double value, std::int64_t step) {
  std::string tensor;
  put_uint(tensor, 1, kDtFloat);
  put_bytes(tensor, 2, "");  // shape []
  std::string content;
  put_le(content, static_cast<float>(value));
  put_bytes(tensor, 4, content);
  const std::string summary = summary_value(tag, tensor, metadata("scalars", "", kDataClassScalar));
  write_event(event(step, nullptr, &summary));
}

void EventWriter::add_histogram(const std::string& tag, const std::vector<double>& values, std::int64_t step,
                                int bucket_count) {
  const std::size_t k = static_cast<std::size_t>(std::max(0, bucket_count));
  std::vector<double> rows(k * 3, 0.0);  // (k, 3): left edge, right edge, count
  if (!values.empty() && k > 0) {
    const auto [lo_it, hi_it] = std::minmax_element(values.begin(), values.end());
    const double lo = *lo_it, hi = *hi_it, range = hi - lo;
    if (range == 0) {
      for (std::size_t i = 0; i < k; ++i) rows[3 * i] = rows[3 * i + 1] = hi;
      rows[3 * (k - 1) + 2] = static_cast<double>(values.size());
    } else {
      const double width = range / static_cast<double>(k);
      for (double x : values) {
        auto i = static_cast<std::int64_t>(std::floor((x - lo) / width));
        i = std::clamp<std::int64_t>(i, 0, static_cast<std::int64_t>(k) - 1);
        rows[3 * static_cast<std::size_t>(i) + 2] += 1;
      }
      for (std::size_t i = 0; i < k; ++i) {  // tf.linspace(lo, hi, k + 1), the last edge exactly hi
        const auto edge = [&](std::size_t j) {
          return j == k ? hi : lo + static_cast<double>(j) * (range / static_cast<double>(k));
        };
        rows[3 * i] = edge(i);
        rows[3 * i + 1] = edge(i + 1);
      }
    }
  }
  std::string tensor;
  put_uint(tensor, 1, kDtDouble);
  put_bytes(tensor, 2, shape_proto({static_cast<std::int64_t>(k), 3}));
  std::string content;
  for (double r : rows) put_le(content, r);
  put_bytes(tensor, 4, content);
  const std::string summary = summary_value(tag, tensor, metadata("histograms", "", kDataClassTensor));
  write_event(event(step, nullptr, &summary));
}

void EventWriter::add_keras_model(const std::string& tag, const std::string& json, std::int64_t step) {
  std::string tensor;
  put_uint(tensor, 1, kDtString);
  put_bytes(tensor, 2, shape_proto({1}));
  put_bytes(tensor, 8, json);
  const std::string summary = summary_value(tag, tensor, metadata("graph_keras_model", "1", kDataClassBlobSequence));
  write_event(event(step, nullptr, &summary));
}

void EventWriter::flush() {
  if (file_ && std::fflush(file_) != 0) throw Error("TensorBoard: flushing \"" + path_ + "\" failed (disk full?)");
}

void EventWriter::close() {
  if (!file_) return;
  std::FILE* f = std::exchange(file_, nullptr);
  if (std::fclose(f) != 0) throw Error("TensorBoard: closing \"" + path_ + "\" failed (disk full?)");
}

// ---- reading --------------------------------------------------------------------------------------

std::vector<std::string> read_tfrecords(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("tfevents: cannot open \"" + path + "\"");
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> records;
  std::size_t pos = 0;
  const auto u32 = [&](std::size_t at) {
    std::uint32_t v;
    std::memcpy(&v, data.data() + at, 4);
    return v;
  };
  while (pos < data.size()) {
    const std::string where = "\"" + path + "\" at byte " + std::to_string(pos);
    if (data.size() - pos < 12) throw Error("tfevents: truncated record header in " + where);
    std::uint64_t length;
    std::memcpy(&length, data.data() + pos, 8);
    if (u32(pos + 8) != mask_crc32c(crc32c(data.data() + pos, 8)))
      throw Error("tfevents: length CRC mismatch in " + where);
    pos += 12;
    if (data.size() - pos < 4 || length > data.size() - pos - 4)
      throw Error("tfevents: truncated record in " + where);
    const std::string record = data.substr(pos, length);
    if (u32(pos + length) != mask_crc32c(crc32c(record.data(), record.size())))
      throw Error("tfevents: data CRC mismatch in " + where);
    pos += length + 4;
    records.push_back(record);
  }
  return records;
}

std::vector<Event> read_events(const std::string& path) {
  std::vector<Event> events;
  for (const std::string& record : read_tfrecords(path)) {
    Event e;
    for (Fields f{record}; f.next();) {
      if (f.field == 1 && f.wire == 1) e.wall_time = f.as_double();
      if (f.field == 2 && f.wire == 0) e.step = static_cast<std::int64_t>(f.number);
      if (f.field == 3) e.file_version = f.bytes;
      if (f.field == 5)
        for (Fields s{f.bytes}; s.next();)
          if (s.field == 1) e.values.push_back(read_value(s.bytes));
    }
    events.push_back(std::move(e));
  }
  return events;
}

}  // namespace tower::io
