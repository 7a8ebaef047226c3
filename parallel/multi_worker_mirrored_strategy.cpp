// MultiWorkerMirroredStrategy: a worker's towers (parallel::Towers with a WorkerPart) plus what the
// workers agree on: each one's share of a batch, the shuffle seed, the model, the data and the state at
// fit's start, and each worker's throughput at every epoch's end.
#include "tower/parallel/multi_worker_mirrored_strategy.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "tower/core/error.h"
#include "tower/core/ops/shape_utils.h"
#include "tower/layers/layer_config.h"
#include "tower/optimizers/optimizer.h"
#include "tower/parallel/towers.h"

namespace tower::parallel {

namespace {

// ---- state as bytes, for the chief's broadcast --------------------------------------------------------

void put_bytes(std::string& out, const void* data, std::size_t n) { out.append(static_cast<const char*>(data), n); }
void put_int(std::string& out, std::int64_t v) { put_bytes(out, &v, sizeof v); }

struct Reader {
  const std::string& in;
  std::size_t at = 0;
  void bytes(void* data, std::size_t n) {
    if (at + n > in.size()) raise<ValueError>("MultiWorkerMirroredStrategy: the chief's state ends early");
    std::memcpy(data, in.data() + at, n);
    at += n;
  }
  std::int64_t integer() {
    std::int64_t v = 0;
    bytes(&v, sizeof v);
    return v;
  }
  std::string text() {
    std::string s(static_cast<std::size_t>(integer()), '\0');
    bytes(s.data(), s.size());
    return s;
  }
};

void put_tensor(std::string& out, const Tensor& t) {
  const Tensor host = t.to(cpu_device());
  put_int(out, static_cast<std::int64_t>(host.dtype()));
  put_int(out, host.shape().rank());
  for (auto d : host.shape().dims()) put_int(out, d);
  put_bytes(out, host.raw_data(), host.nbytes());
}
Tensor get_tensor(Reader& r) {
  const auto dtype = static_cast<DType>(r.integer());
  std::vector<std::int64_t> dims(static_cast<std::size_t>(r.integer()));
  for (auto& d : dims) d = r.integer();
  Tensor t = Tensor::zeros(Shape(dims), dtype);
  r.bytes(t.raw_data(), t.nbytes());
  return t;
}

// What the workers compare: every variable's name, shape and dtype, one line each.
std::vector<std::string> fingerprint(const Model& model) {
  std::vector<std::string> lines;
  for (const auto& v : model.weights())
    lines.push_back(fmt::format("\"{}\" {} {}", v->name(), v->value().shape().to_string(), dtype_name(v->dtype())));
  return lines;
}
std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}
std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  for (std::size_t nl; (nl = s.find('\n', start)) != std::string::npos; start = nl + 1) lines.push_back(s.substr(start, nl - start));
  return lines;
}

// Each worker's samples per second over an epoch, gathered at its end; the chief prints them.
class WorkerMeter : public Callback {
 public:
  explicit WorkerMeter(const MultiWorkerMirroredStrategy::Workers& workers) : workers_(workers) {}
  void on_epoch_begin(int, const Logs&) override {
    samples_ = 0;
    start_ = std::chrono::steady_clock::now();
  }
  void on_train_batch_end(std::int64_t, const Logs&) override;
  void on_epoch_end(int, Logs&) override;

 private:
  const MultiWorkerMirroredStrategy::Workers& workers_;  // the model holds them while fit runs
  std::int64_t samples_ = 0;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

// ---- the Replication ----------------------------------------------------------------------------------

class MultiWorkerMirroredStrategy::Workers : public Replication {
 public:
  Workers(const std::vector<std::string>& devices, const MultiGpuOptions& options, ProcessGroup& group)
      : group_(group) {
    // Each worker's weight in a batch (the sum of its devices' ratios), its replicas, and whether its
    // buckets can cross by NCCL (its first device a physical GPU, NCCL loading): all of them must.
    const Towers local(devices, mirrored(options), "MultiWorkerMirroredStrategy");
    std::int64_t weight = 0;
    for (auto r : local.ratios()) weight += r;
    const bool nccl = nccl_across_workers_unsupported(local.devices().front()).empty();
    const auto all = group_.all_gather(fmt::format("{} {} {}", weight, local.devices().size(), nccl ? 1 : 0),
                                       {.what = "worker devices"});
    bool every_nccl = true;
    for (const auto& text : all) {
      long long w = 0, n = 0;
      int gpu = 0;
      std::sscanf(text.c_str(), "%lld %lld %d", &w, &n, &gpu);
      weights_.push_back(w);
      replicas_ += static_cast<int>(n);
      every_nccl = every_nccl && gpu == 1;
    }
    // Also for one worker alone: its sums are then NCCL's with one rank (how one GPU checks the path).
    transport_ = every_nccl ? WorkerTransport::nccl : WorkerTransport::mpi;
    if (transport_ == WorkerTransport::nccl) join_nccl_workers(group_, local.devices().front());
    towers_ = std::make_shared<Towers>(devices, mirrored(options), "MultiWorkerMirroredStrategy",
                                       WorkerPart{.rank = group.rank(), .size = group.size(), .transport = transport_});
  }

  std::unique_ptr<ReplicatedCall> call(Model& model, CallContext& ctx,
                                       const std::vector<SymbolicTensor>& inputs) const override {
    return towers_->call(model, ctx, inputs);
  }
  int num_replicas_in_sync() const override { return replicas_; }
  std::vector<CallbackPtr> fit_callbacks() const override {
    if (group_.size() == 1) return {};
    return {std::make_shared<WorkerMeter>(*this)};
  }

  Rows local_rows(std::int64_t rows, bool own) const override {
    if (group_.size() == 1) return {0, rows, rows};
    if (own) {  // a sharded pipeline: the workers' parts make the global batch, in rank order
      const auto all = group_.all_gather(std::to_string(rows), {.what = "rows of the batch"});
      Rows mine{.count = rows};
      for (int w = 0; w < group_.size(); ++w) {
        const std::int64_t n = std::stoll(all[static_cast<std::size_t>(w)]);
        if (w < group_.rank()) mine.first += n;
        mine.global += n;
      }
      return mine;
    }
    if (rows != split_of_) {  // once per batch size: a steady step computes nothing here
      split_ = largest_remainder_split(rows, weights_);
      split_of_ = rows;
    }
    Rows mine{.global = rows};
    for (int w = 0; w < group_.rank(); ++w) mine.first += split_[static_cast<std::size_t>(w)];
    mine.count = split_[static_cast<std::size_t>(group_.rank())];
    return mine;
  }
  bool is_chief() const override { return group_.rank() == 0; }

  std::uint64_t common_seed(std::uint64_t seed) const override {
    Tensor value = Tensor::zeros(Shape{1}, DType::int64);
    value.data<std::int64_t>()[0] = static_cast<std::int64_t>(seed);
    group_.broadcast(value, 0, {.what = "shuffle seed"});
    return static_cast<std::uint64_t>(value.data<std::int64_t>()[0]);
  }

  void begin_fit(Model& model, std::int64_t steps_per_epoch, int& epoch, std::int64_t& step) const override {
    if (group_.size() == 1) return;
    check_same_model(model);
    check_same_data(steps_per_epoch);
    // The chief's weights, optimizer state and position (a backup it restored, or its fresh weights).
    std::string state;
    if (is_chief()) {
      put_int(state, epoch);
      put_int(state, step);
      for (const auto& v : model.weights()) put_tensor(state, v->value());
      optimizers::Optimizer& optimizer = model.optimizer();
      put_int(state, optimizer.iterations());
      const auto slots = optimizer.variables();
      const auto& pending = optimizer.pending_state();
      put_int(state, static_cast<std::int64_t>(slots.size() + pending.size()));
      for (const auto& s : slots) {
        put_int(state, static_cast<std::int64_t>(s->name().size()));
        state += s->name();
        put_tensor(state, s->value());
      }
      for (const auto& [name, value] : pending) {
        put_int(state, static_cast<std::int64_t>(name.size()));
        state += name;
        put_tensor(state, value);
      }
    }
    group_.broadcast(state, 0, {.what = "weights and optimizer"});
    if (is_chief()) return;
    Reader r{state};
    epoch = static_cast<int>(r.integer());
    step = r.integer();
    for (const auto& v : model.weights()) v->assign(get_tensor(r).to(v->value().device()));
    const std::int64_t iterations = r.integer();
    std::map<std::string, Tensor> slots;
    for (std::int64_t k = r.integer(); k > 0; --k) {
      std::string name = r.text();
      slots[name] = get_tensor(r);
    }
    model.optimizer().set_state(iterations, std::move(slots));
  }

  // Each worker's record, gathered: every worker finds the same first difference from the chief's, so
  // every one raises the same error (and the group stays in step: no collective is left half done).
  void check_agreement(const std::function<Agreement()>& agreement) const override {
    if (group_.size() == 1) return;
    std::string mine;
    for (const auto& [what, value] : agreement()) mine += what + '\t' + value + '\n';
    const auto all = group_.all_gather(mine, {.what = "fit agreement"});
    const auto chief = split_lines(all[0]);
    for (int w = 1; w < group_.size(); ++w) {
      const auto theirs = split_lines(all[static_cast<std::size_t>(w)]);
      for (std::size_t k = 0; k < std::max(chief.size(), theirs.size()); ++k) {
        const std::string a = k < chief.size() ? chief[k] : "", b = k < theirs.size() ? theirs[k] : "";
        if (a == b) continue;
        const auto field = [](const std::string& line) { return line.substr(0, line.find('\t')); };
        const auto value = [](const std::string& line) {
          const auto tab = line.find('\t');
          return tab == std::string::npos ? std::string("nothing") : line.substr(tab + 1);
        };
        const std::string what = field(a) == field(b) || b.empty() ? field(a) : field(b);
        raise<ValueError>("MultiWorkerMirroredStrategy: worker {} and the chief disagree on {}: {} (chief) vs {} "
                          "(worker {}); start every worker with the same options (the same program, arguments and "
                          "data): the workers train one model together",
                          w, what, value(a), value(b), w);
      }
    }
  }

  void fit_failed(const std::exception& error) const noexcept override {
    if (group_.size() == 1 || dynamic_cast<const CollectiveError*>(&error)) return;
    try {
      group_.announce_failure(error.what());
    } catch (...) {  // the group has ended (the program exits): the launcher ends the others
    }
  }

  ProcessGroup& group() const { return group_; }
  WorkerTransport transport() const { return transport_; }
  const std::vector<std::string>& devices() const { return towers_->devices(); }

 private:
  static MultiGpuOptions mirrored(MultiGpuOptions options) {
    options.mirrored = true;
    return options;
  }

  // A different model on one worker is an error naming the first differing variable and the ranks.
  void check_same_model(const Model& model) const {
    const auto mine = fingerprint(model);
    const auto all = group_.all_gather(joined(mine), {.what = "model fingerprint"});
    const auto chief = split_lines(all[0]);
    for (int w = 1; w < group_.size(); ++w) {
      const auto theirs = split_lines(all[static_cast<std::size_t>(w)]);
      for (std::size_t k = 0; k < std::max(chief.size(), theirs.size()); ++k) {
        const std::string a = k < chief.size() ? chief[k] : "nothing", b = k < theirs.size() ? theirs[k] : "nothing";
        if (a != b)
          raise<ValueError>("MultiWorkerMirroredStrategy: the workers build different models: variable {} is {} on "
                            "worker 0 (the chief) but {} on worker {}; every worker must build and compile the same "
                            "model (run the same program with the same arguments)",
                            k, a, b, w);
      }
    }
  }

  // Workers with fewer batches would wait for each other at the end of an epoch: an error instead.
  void check_same_data(std::int64_t steps) const {
    const auto all = group_.all_gather(std::to_string(steps), {.what = "batches per epoch"});
    for (int w = 1; w < group_.size(); ++w)
      if (all[static_cast<std::size_t>(w)] != all[0])
        raise<ValueError>("MultiWorkerMirroredStrategy: the workers' training data differ: worker 0 has {} batches per "
                          "epoch, worker {} has {}; every worker must read the same global data (the same arrays, or "
                          "the same dataset, and batch_size): each computes its share of every batch",
                          all[0], w, all[static_cast<std::size_t>(w)]);
  }

  ProcessGroup& group_;
  std::shared_ptr<Towers> towers_;
  std::vector<std::int64_t> weights_;  // per worker: its share of a batch
  int replicas_ = 0;
  WorkerTransport transport_ = WorkerTransport::mpi;
  mutable std::vector<std::int64_t> split_;
  mutable std::int64_t split_of_ = -1;
};

namespace {

void WorkerMeter::on_train_batch_end(std::int64_t, const Logs&) {
  // This worker's share of the global batch (for a sharded pipeline, the even share of it).
  samples_ += workers_.local_rows(model().last_batch_size(Model::Mode::train), false).count;
}

void WorkerMeter::on_epoch_end(int, Logs&) {
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double rate = seconds > 0 ? static_cast<double>(samples_) / seconds : 0.0;
  const auto all = workers_.group().all_gather(fmt::format("{:.0f}", rate), {.what = "worker throughput"});
  if (!workers_.is_chief() || params_.verbose == 0) return;
  std::string line;
  double total = 0;
  for (std::size_t w = 0; w < all.size(); ++w) {
    line += fmt::format("worker {} {} sps  ", w, all[w]);
    total += std::atof(all[w].c_str());
  }
  std::cout << line << fmt::format("total {:.0f} sps", total) << "\n";
}

}  // namespace

// ---- TF_CONFIG and KERAS_DISTRIBUTION_* ---------------------------------------------------------------

std::string check_cluster_environment(int rank, int size) {
  const auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v ? v : "";
  };
  const std::string mpi = fmt::format("MPI started this process as rank {} of {}", rank, size);
  if (const std::string text = env("TF_CONFIG"); !text.empty()) {
    int expected_rank = 0, expected_size = 0;
    std::string task;
    try {
      const auto config = layers::parse_json(text, "TF_CONFIG");
      const auto& cluster = config.at("cluster");
      const int chiefs = cluster.contains("chief") ? static_cast<int>(cluster.at("chief").size()) : 0;
      const int workers = cluster.contains("worker") ? static_cast<int>(cluster.at("worker").size()) : 0;
      expected_size = chiefs + workers;
      const std::string type = config.at("task").at("type").get<std::string>();
      const int index = config.at("task").at("index").get<int>();
      if (type != "worker" && type != "chief")
        return fmt::format("TF_CONFIG: task type \"{}\" is not one tower runs (worker or chief)", type);
      expected_rank = type == "chief" ? index : chiefs + index;
      task = fmt::format("task {{\"type\": \"{}\", \"index\": {}}}", type, index);
    } catch (const ValueError& e) {  // nested too deep (layers::parse_json)
      return e.what();
    } catch (const nlohmann::json::exception& e) {
      return fmt::format("TF_CONFIG is not the JSON TensorFlow takes ({}); e.g. {{\"cluster\": {{\"worker\": "
                         "[\"host1:12345\", \"host2:12345\"]}}, \"task\": {{\"type\": \"worker\", \"index\": 0}}}}",
                         e.what());
    }
    if (expected_size != size || expected_rank != rank)
      return fmt::format("TF_CONFIG lists {} processes and makes this one ({}) number {}, but {}; start as many "
                         "processes as TF_CONFIG lists (mpirun -np {}) with their own task index each, or unset "
                         "TF_CONFIG (tower takes the workers from MPI)",
                         expected_size, task, expected_rank, mpi, expected_size);
  }
  const std::string processes = env("KERAS_DISTRIBUTION_NUM_PROCESSES"), id = env("KERAS_DISTRIBUTION_PROCESS_ID");
  if (!processes.empty() && processes != std::to_string(size))
    return fmt::format("KERAS_DISTRIBUTION_NUM_PROCESSES={} but {}; make them agree, or unset it", processes, mpi);
  if (!id.empty() && id != std::to_string(rank))
    return fmt::format("KERAS_DISTRIBUTION_PROCESS_ID={} but {}; make them agree, or unset it", id, mpi);
  return "";
}

// ---- MultiWorkerMirroredStrategy ----------------------------------------------------------------------

MultiWorkerMirroredStrategy::MultiWorkerMirroredStrategy() : MultiWorkerMirroredStrategy(all_gpus_or_cpu()) {}

MultiWorkerMirroredStrategy::MultiWorkerMirroredStrategy(const std::vector<std::string>& devices,
                                                         const MultiGpuOptions& options,
                                                         const CommunicationOptions& communication) {
  if (const std::string why = ProcessGroup::unavailable(); !why.empty())
    raise<Error>("MultiWorkerMirroredStrategy: {}", why);
  ProcessGroup& group = ProcessGroup::world();
  if (const std::string why = check_cluster_environment(group.rank(), group.size()); !why.empty())
    raise<ValueError>("MultiWorkerMirroredStrategy: {}", why);
  if (communication.timeout_seconds != 0) group.set_timeout(communication.timeout_seconds);
  workers_ = std::make_shared<Workers>(devices, options, group);
}

int MultiWorkerMirroredStrategy::num_replicas_in_sync() const { return workers_->num_replicas_in_sync(); }
int MultiWorkerMirroredStrategy::worker_index() const { return workers_->group().rank(); }
int MultiWorkerMirroredStrategy::num_workers() const { return workers_->group().size(); }
const std::vector<std::string>& MultiWorkerMirroredStrategy::devices() const { return workers_->devices(); }
bool MultiWorkerMirroredStrategy::uses_nccl() const { return workers_->transport() == WorkerTransport::nccl; }

MultiWorkerMirroredStrategy::Scope MultiWorkerMirroredStrategy::scope() const {
  return Scope(workers_, devices().front());
}

}  // namespace tower::parallel
