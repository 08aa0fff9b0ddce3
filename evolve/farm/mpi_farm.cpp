// The farm over MPI: the head's broker thread and the other ranks' serving loop.
#include "evolve/farm/mpi_farm.h"

#include <cstdlib>

#include "evolve/farm/farm.h"
#include "ir/diagnostic.h"

#ifdef KS_HAVE_MPI
#include <elf.h>
#include <link.h>
#include <mpi.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <list>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "evolve/workers.h"
#endif

namespace ks {

bool launched_by_mpi() {
  if (std::getenv(kFarmEnv)) return false;  // a child of the head: its searches, their relays
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"})
    if (std::getenv(name)) return true;
  return false;
}

#ifndef KS_HAVE_MPI

std::unique_ptr<Farm> Farm::join(const FarmOptions &) {
  throw UserError(
      "error: this ksmith was started by an MPI launcher, but was built without MPI (install libopenmpi-dev and "
      "configure again): every rank would run the whole command on its own");
}

#else

namespace {

namespace fs = std::filesystem;

// The messages, each a JSON text; the payloads of JOB, ANSWER and GONE carry a slot
// (the head's number for one relay: one worker on the rank).
enum Tag : int {
  kHello = 1,   // rank -> head: {version, host, devices, error?}
  kJob = 3,     // head -> rank: {slot, device, line}: a line for the slot's worker (started if needed)
  kClose = 4,   // head -> rank: {slot}: its relay is gone; end its worker
  kStop = 5,    // head -> rank: end
  kAnswer = 6,  // rank -> head: {slot, line}: a line the worker printed
  kGone = 7,    // rank -> head: {slot, err}: the worker ended
  kBeat = 8,    // rank -> head: alive, every second
};

// What tells two builds of ksmith apart: the linker's build ID (a hash of the
// executable, NT_GNU_BUILD_ID), read from this process's program headers; the
// executable's size where the linker wrote none.
std::string build_fingerprint() {
  std::string id;
  dl_iterate_phdr(
      [](dl_phdr_info *info, size_t, void *out) {
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr) &ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_NOTE) continue;
          const char *p = reinterpret_cast<const char *>(info->dlpi_addr + ph.p_vaddr), *end = p + ph.p_memsz;
          while (p + sizeof(ElfW(Nhdr)) <= end) {
            const auto *note = reinterpret_cast<const ElfW(Nhdr) *>(p);
            const char *desc = p + sizeof(ElfW(Nhdr)) + ((note->n_namesz + 3) & ~3u);
            if (note->n_type == NT_GNU_BUILD_ID)
              for (unsigned k = 0; k < note->n_descsz; ++k) {
                char hex[3];
                std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(desc[k]));
                *static_cast<std::string *>(out) += hex;
              }
            p = desc + ((note->n_descsz + 3) & ~3u);
          }
        }
        return 1;  // the first object is the executable
      },
      &id);
  if (id.empty()) {
    std::error_code ec;
    id = "size " + std::to_string(fs::file_size("/proc/self/exe", ec));
  }
  return id;
}

// A new folder NAME-XXXXXX in the temporary directory ($TMPDIR, else /tmp); "" when
// it cannot be made.
std::string temporary_folder(const std::string &name) {
  std::string path = (fs::temp_directory_path() / (name + "-XXXXXX")).string();
  return ::mkdtemp(path.data()) ? path : "";
}

// Messages sent without blocking: each kept until MPI is done with its buffer.
class Outbox {
 public:
  void send(int to, Tag tag, const nlohmann::json &payload) {
    pending_.push_back({payload.dump(), MPI_REQUEST_NULL});
    Pending &p = pending_.back();
    MPI_Isend(p.text.data(), static_cast<int>(p.text.size()), MPI_CHAR, to, tag, MPI_COMM_WORLD, &p.request);
  }
  void progress() {
    for (auto it = pending_.begin(); it != pending_.end();) {
      int done = 0;
      MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
      it = done ? pending_.erase(it) : std::next(it);
    }
  }
  bool empty() const { return pending_.empty(); }

 private:
  struct Pending {
    std::string text;
    MPI_Request request;
  };
  std::list<Pending> pending_;
};

struct Message {
  int from = -1;
  Tag tag = kBeat;
  nlohmann::json payload;
};

// The next message that has arrived, if any.
std::optional<Message> receive() {
  int flag = 0;
  MPI_Status status;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &status);
  if (!flag) return std::nullopt;
  int count = 0;
  MPI_Get_count(&status, MPI_CHAR, &count);
  std::string text(static_cast<size_t>(count), '\0');
  MPI_Recv(text.data(), count, MPI_CHAR, status.MPI_SOURCE, status.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  Message m;
  m.from = status.MPI_SOURCE;
  m.tag = static_cast<Tag>(status.MPI_TAG);
  m.payload = nlohmann::json::parse(text, nullptr, false);
  return m;
}

std::string host_name() {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  return name;
}

// The positions in a job's arguments of the files it names: the spec of `run` and
// `time`, and the values of --schedule and --kernel.
std::vector<size_t> file_arguments(const nlohmann::json &args) {
  std::vector<size_t> at;
  if (args.size() > 1 && (args[0] == "run" || args[0] == "time")) at.push_back(1);
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == "--schedule" || args[i] == "--kernel") at.push_back(i + 1);
  return at;
}

// The head: the texts of the files a job line names, sent with it, so that a rank
// needs no file system in common with the head. A file the head cannot read is left
// to the rank's worker to report.
nlohmann::json files_of(const std::string &line) {
  nlohmann::json files = nlohmann::json::array();
  nlohmann::json job = nlohmann::json::parse(line, nullptr, false);
  if (!job.is_object() || !job.contains("args") || !job["args"].is_array()) return files;
  for (size_t at : file_arguments(job["args"])) {
    if (!job["args"][at].is_string()) continue;
    const std::string path = job["args"][at].get<std::string>();
    try {
      files.push_back(
          {{"at", at}, {"name", fs::path(path).filename().string()}, {"text", read_source_file(path, "file")->text}});
    } catch (const UserError &) {
    }
  }
  return files;
}

// A rank: the job's files written under dir, each once (named by its text's hash), the
// job's arguments pointing at them; originals maps each back to the head's path.
void place_files(nlohmann::json &job, const nlohmann::json &files, const std::string &dir,
                 std::map<std::string, std::string> &originals) {
  if (!files.is_array() || !job.contains("args") || !job["args"].is_array()) return;
  for (const nlohmann::json &f : files) {
    const size_t at = f.value("at", size_t{0});
    const std::string text = f.value("text", std::string());
    if (at == 0 || at >= job["args"].size() || !job["args"][at].is_string()) continue;
    char hash[32];
    std::snprintf(hash, sizeof hash, "%016zx", std::hash<std::string>{}(text));
    const std::string path =
        dir + "/" + hash + "-" + fs::path(f.value("name", std::string("file"))).filename().string();
    if (!fs::exists(path)) write_text_file(path, text);
    originals[path] = job["args"][at].get<std::string>();
    job["args"][at] = path;
  }
}

// A rank: a worker's answer with the record's spec named as the head named it.
std::string restore_spec(const std::string &line, const std::map<std::string, std::string> &originals) {
  nlohmann::json answer = nlohmann::json::parse(line, nullptr, false);
  if (!answer.is_object() || !answer.contains("out") || !answer["out"].is_string()) return line;
  nlohmann::json record = nlohmann::json::parse(answer["out"].get<std::string>(), nullptr, false);
  if (!record.is_object() || !record.contains("spec") || !record["spec"].is_string()) return line;
  auto it = originals.find(record["spec"].get<std::string>());
  if (it == originals.end()) return line;
  record["spec"] = it->second;
  answer["out"] = record.dump();
  return answer.dump();
}

class MpiFarm : public Farm {
 public:
  explicit MpiFarm(const FarmOptions &o) : options_(o) {
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided_);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }

  // What the constructor cannot do: a UserError from here reaches the caller after
  // the destructor told every rank to stop.
  void start() {
    const FarmOptions &o = options_;
    if (provided_ < MPI_THREAD_SERIALIZED) fail_start("the MPI library offers no MPI_THREAD_SERIALIZED");
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
    int local_rank = 0, local_size = 1;
    MPI_Comm_rank(local, &local_rank);
    MPI_Comm_size(local, &local_size);
    MPI_Comm_free(&local);
    host_ = host_name();
    // This rank's share of its host's devices, dealt round-robin by local rank.
    std::string error;
    std::vector<runtime::DeviceInfo> all;
    try {
      all = runtime::find_devices(o.selectors, o.api);
    } catch (const std::exception &e) {
      error = e.what();
    }
    for (size_t i = 0; i < all.size(); ++i)
      if (static_cast<int>(i % static_cast<size_t>(local_size)) == local_rank) {
        all[i].place = rank_ == 0 ? "" : "rank" + std::to_string(rank_);
        own_.push_back(all[i]);
      }
    if (error.empty() && own_.empty())
      std::fprintf(stderr,
                   "note: rank %d on %s has no device of its own (%zu on its host for %d ranks there): it idles\n",
                   rank_, host_.c_str(), all.size(), local_size);
    if (rank_ == 0)
      gather(error);
    else
      hello(error);
  }

  ~MpiFarm() override {
    if (rank_ == 0 && !finished_) {  // an error on the head: the ranks stop with it
      stop_broker();
      // A rank that does not answer would hold MPI_Finalize forever: the job is
      // aborted instead, its reason said already.
      if (!failure_.empty()) MPI_Abort(MPI_COMM_WORLD, 1);
      for (int r = 1; r < size_; ++r) outbox_.send(r, kStop, nlohmann::json::object());
      drain();
    }
    std::error_code ec;
    if (!farm_dir_.empty()) fs::remove_all(farm_dir_, ec);
    if (!files_dir_.empty()) fs::remove_all(files_dir_, ec);
    MPI_Finalize();
  }

  bool head() const override { return rank_ == 0; }
  const std::vector<runtime::DeviceInfo> &devices() const override { return devices_; }

  int serve() override {
    struct Worker {
      std::unique_ptr<Child> child;
      std::string lock;
      std::string err;                               // the end of what it printed on its standard error: why it died
      std::map<std::string, std::string> originals;  // its files here, to the head's paths
    };
    std::map<int64_t, Worker> workers;
    files_dir_ = temporary_folder("ksmith-rank");
    if (files_dir_.empty()) {
      std::fprintf(stderr, "error: rank %d on %s cannot make a folder in %s: %s\n", rank_, host_.c_str(),
                   fs::temp_directory_path().c_str(), std::strerror(errno));
      return 1;
    }
    const std::string ksmith = options_.ksmith.empty() ? fs::read_symlink("/proc/self/exe").string() : options_.ksmith;
    double beat = 0;
    int idle = 0;  // looks in a row that found nothing to do
    while (true) {
      if (monotonic_seconds() - beat >= 1) {
        outbox_.send(0, kBeat, nlohmann::json::object());
        beat = monotonic_seconds();
      }
      outbox_.progress();
      bool busy = false;
      while (std::optional<Message> m = receive()) {
        busy = true;
        if (m->tag == kStop) {
          for (auto &w : workers) w.second.child->kill();
          drain();
          return 0;
        }
        if (!m->payload.is_object()) continue;  // not one of the head's messages
        if (m->tag == kClose) {
          workers.erase(m->payload.value("slot", int64_t{-1}));  // ~Child kills it
          continue;
        }
        if (m->tag != kJob) continue;
        const int64_t slot = m->payload.value("slot", int64_t{-1});
        const std::string device = m->payload.value("device", std::string());
        auto d = std::find_if(own_.begin(), own_.end(),
                              [&](const runtime::DeviceInfo &x) { return x.selector() == device; });
        if (d == own_.end()) {
          outbox_.send(
              0, kGone,
              {{"slot", slot},
               {"err", "error: rank " + std::to_string(rank_) + " on " + host_ + " has no device " + device + "\n"}});
          continue;
        }
        Worker &w = workers[slot];
        if (!w.child) {
          w.child = std::make_unique<Child>(std::vector<std::string>{ksmith, "worker"}, true);
          w.lock = device_lock_path(d->api, d->index, d->name);
        }
        // The job's lock is this host's (the head knows only the device), its files
        // copies of the head's.
        nlohmann::json job = nlohmann::json::parse(m->payload.value("line", std::string()), nullptr, false);
        if (job.is_object() && job.contains("args") && job["args"].is_array()) {
          job["args"].insert(job["args"].end(), {"--device-lock", w.lock});
          if (m->payload.contains("files")) place_files(job, m->payload["files"], files_dir_, w.originals);
        }
        w.child->send(job.dump() + "\n");
      }
      for (auto it = workers.begin(); it != workers.end();) {
        Child &c = *it->second.child;
        const bool exited = !c.started() || c.poll(0);
        while (std::optional<std::string> line = c.take_line()) {
          outbox_.send(0, kAnswer, {{"slot", it->first}, {"line", restore_spec(*line, it->second.originals) + "\n"}});
          busy = true;
        }
        std::string &err = it->second.err;
        err += c.take_err();
        if (err.size() > 4096) err.erase(0, err.size() - 4096);
        if (exited) {
          outbox_.send(0, kGone, {{"slot", it->first}, {"err", err}});
          it = workers.erase(it);
          continue;
        }
        ++it;
      }
      // Half a millisecond between looks while jobs come and go, 5 ms after a quiet
      // fifth of a second: an idle rank of a large job costs next to nothing.
      idle = busy ? 0 : idle + 1;
      if (!busy) ::usleep(idle < 400 ? 500 : 5000);
    }
  }

  int finish(int status) override {
    stop_broker();
    finished_ = true;
    if (!failure_.empty()) MPI_Abort(MPI_COMM_WORLD, 1);  // the failure was said when it came
    for (int r = 1; r < size_; ++r) outbox_.send(r, kStop, nlohmann::json::object());
    drain();
    return status;
  }

 private:
  FarmOptions options_;
  bool finished_ = false;
  int provided_ = 0, rank_ = 0, size_ = 1;
  std::vector<std::string> hosts_;  // the head: each rank's host
  std::string host_;
  std::vector<runtime::DeviceInfo> own_, devices_;
  std::map<std::string, int> rank_of_;  // the head: each other rank's device, by where(), to its rank
  Outbox outbox_;
  std::string farm_dir_;   // the head's: devices.json and the relays' socket
  std::string files_dir_;  // a rank's: the copies of the files its jobs name
  int listener_ = -1;
  std::thread broker_;
  std::atomic<bool> quit_{false};
  std::string failure_;  // written by the broker, read after it ended

  [[noreturn]] void fail_start(const std::string &why) { throw UserError("error: " + why); }

  // Sends what is still pending, for a second at most (a rank gone does not hold the end).
  void drain() {
    const double until = monotonic_seconds() + 1;
    while (!outbox_.empty() && monotonic_seconds() < until) {
      outbox_.progress();
      ::usleep(1000);
    }
  }

  // A rank's first message: its build, host and devices (serve() goes on from there; a
  // head that refuses the job sends kStop).
  void hello(const std::string &error) {
    nlohmann::json devices = nlohmann::json::array();
    for (const runtime::DeviceInfo &d : own_) devices.push_back(device_info_json(d));
    nlohmann::json h = {{"version", build_fingerprint()}, {"host", host_}, {"devices", devices}};
    if (!error.empty()) h["error"] = error;
    outbox_.send(0, kHello, h);
  }

  // The head: every rank's hello, checked; the farm's folder and the broker.
  void gather(const std::string &own_error) {
    if (!own_error.empty()) fail_start("rank 0 on " + host_ + ": " + strip(own_error));
    const std::string version = build_fingerprint();
    devices_ = own_;
    std::vector<nlohmann::json> hellos(static_cast<size_t>(size_));
    int heard = 1;
    const double until = monotonic_seconds() + options_.rank_timeout_s;
    while (heard < size_) {
      std::optional<Message> m = receive();
      if (!m) {
        if (monotonic_seconds() > until) {
          std::string silent;
          for (int r = 1; r < size_; ++r)
            if (hellos[static_cast<size_t>(r)].is_null()) silent += (silent.empty() ? "" : ", ") + std::to_string(r);
          failure_ = "error: rank " + silent + " did not report in " +
                     std::to_string(static_cast<int>(options_.rank_timeout_s)) + " s: it hangs, or its host is gone";
          std::fprintf(stderr, "%s\n", failure_.c_str());
          fail_start(failure_.substr(7));
        }
        ::usleep(1000);
        continue;
      }
      if (m->tag != kHello || !m->payload.is_object()) continue;
      hellos[static_cast<size_t>(m->from)] = m->payload;
      ++heard;
    }
    hosts_.assign(static_cast<size_t>(size_), host_);
    for (int r = 1; r < size_; ++r) {
      const nlohmann::json &h = hellos[static_cast<size_t>(r)];
      hosts_[static_cast<size_t>(r)] = h.value("host", std::string("?"));
      const std::string where = "rank " + std::to_string(r) + " on " + hosts_[static_cast<size_t>(r)];
      if (h.value("version", std::string()) != version)
        fail_start(where + " runs another ksmith than rank 0 (build " + h.value("version", std::string("?")) +
                   ", rank 0's " + version + "): every rank must run the same executable");
      if (h.contains("error")) fail_start(where + ": " + strip(h.value("error", std::string())));
      if (!h.contains("devices") || !h["devices"].is_array()) fail_start(where + " sent no device list");
      for (const nlohmann::json &d : h["devices"]) {
        devices_.push_back(device_info_from_json(d));
        rank_of_[devices_.back().where()] = r;
      }
    }
    if (devices_.empty()) fail_start("no rank of the job has a device ('" + options_.selectors + "' found none)");
    for (const runtime::DeviceInfo &d : devices_)
      if (d.api != devices_.front().api)
        fail_start("a run's devices are of one API: " + devices_.front().where() + " is " + devices_.front().api +
                   ", " + d.where() + " is " + d.api);
    farm_dir_ = temporary_folder("ksmith-farm");
    if (farm_dir_.empty())
      fail_start("cannot make the farm's folder in " + fs::temp_directory_path().string() + ": " +
                 std::strerror(errno));
    write_farm_devices(farm_dir_, devices_);
    listener_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    const std::string socket_path = farm_dir_ + "/socket";
    std::strcpy(address.sun_path, socket_path.c_str());
    if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr *>(&address), sizeof address) != 0 ||
        ::listen(listener_, 256) != 0)
      fail_start("cannot listen on '" + socket_path + "': " + std::strerror(errno));
    ::setenv(kFarmEnv, farm_dir_.c_str(), 1);
    broker_ = std::thread([this] { broker(); });
  }

  static std::string strip(std::string text) {
    if (text.rfind("error: ", 0) == 0) text.erase(0, 7);
    while (!text.empty() && text.back() == '\n') text.pop_back();
    return text;
  }

  void stop_broker() {
    quit_ = true;
    if (broker_.joinable()) broker_.join();
    if (listener_ >= 0) ::close(listener_);
    listener_ = -1;
  }

  // The head's broker: relays' lines to their ranks, the ranks' answers back, and a
  // watch on every rank's heartbeat.
  void broker() {
    struct Relay {
      int fd = -1;
      int rank = -1;
      std::string device;  // on its rank: "opencl:0"
      std::string in;      // what it sent, up to a whole line
    };
    std::map<int64_t, Relay> relays;
    int64_t next_slot = 1;
    int idle = 0;  // looks in a row that found nothing but heartbeats
    std::vector<double> heard(static_cast<size_t>(size_), monotonic_seconds());
    auto close_relay = [&](int64_t slot, bool tell_rank) {
      auto it = relays.find(slot);
      if (it == relays.end()) return;
      if (tell_rank && it->second.rank > 0) outbox_.send(it->second.rank, kClose, {{"slot", slot}});
      ::close(it->second.fd);
      relays.erase(it);
    };
    while (!quit_) {
      std::vector<pollfd> fds = {{listener_, POLLIN, 0}};
      std::vector<int64_t> slots = {0};
      for (const auto &r : relays) {
        fds.push_back({r.second.fd, POLLIN, 0});
        slots.push_back(r.first);
      }
      // A millisecond between looks at MPI's messages while they come, 5 after a quiet
      // fifth of a second (a relay's line wakes the poll at once either way).
      const int ready = ::poll(fds.data(), fds.size(), idle < 200 ? 1 : 5);
      bool busy = ready > 0;
      if (fds[0].revents & POLLIN) {
        int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd >= 0) relays[next_slot++] = Relay{fd, -1, {}, {}};
      }
      char buffer[1 << 16];
      for (size_t i = 1; i < fds.size(); ++i) {
        if (!fds[i].revents) continue;
        const int64_t slot = slots[i];
        Relay &r = relays.at(slot);
        ssize_t n = ::read(r.fd, buffer, sizeof buffer);
        if (n <= 0) {
          close_relay(slot, true);
          continue;
        }
        r.in.append(buffer, static_cast<size_t>(n));
        for (size_t end; relays.count(slot) && (end = r.in.find('\n')) != std::string::npos;) {
          std::string line = r.in.substr(0, end + 1);
          r.in.erase(0, end + 1);
          if (r.rank < 0) {  // its first line: {"to": "rank1/opencl:0"}
            nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
            const std::string to = j.is_object() ? j.value("to", std::string()) : "";
            auto d = std::find_if(devices_.begin(), devices_.end(),
                                  [&](const runtime::DeviceInfo &x) { return !x.place.empty() && x.where() == to; });
            if (d == devices_.end()) {
              write_all(r.fd, nlohmann::json{{"gone", "error: the farm has no device '" + to + "'\n"}}.dump() + "\n");
              close_relay(slot, false);
              break;
            }
            r.rank = rank_of_.at(to);
            r.device = d->selector();
            continue;
          }
          outbox_.send(r.rank, kJob, {{"slot", slot}, {"device", r.device}, {"line", line}, {"files", files_of(line)}});
        }
      }
      while (std::optional<Message> m = receive()) {
        heard[static_cast<size_t>(m->from)] = monotonic_seconds();
        busy = busy || m->tag != kBeat;
        if (!m->payload.is_object()) continue;
        const int64_t slot = m->payload.value("slot", int64_t{-1});
        auto it = relays.find(slot);
        if (m->tag == kAnswer && it != relays.end()) {
          if (!write_all(it->second.fd, m->payload.value("line", std::string()))) close_relay(slot, true);
        } else if (m->tag == kGone && it != relays.end()) {
          write_all(it->second.fd, nlohmann::json{{"gone", m->payload.value("err", std::string())}}.dump() + "\n");
          close_relay(slot, false);
        }
      }
      outbox_.progress();
      idle = busy ? 0 : idle + 1;
      for (int r = 1; r < size_ && failure_.empty(); ++r) {
        const double silent = monotonic_seconds() - heard[static_cast<size_t>(r)];
        if (silent <= options_.rank_timeout_s) continue;
        char text[512];
        std::snprintf(text, sizeof text,
                      "error: rank %d on %s has sent nothing for %.0f s (it hangs, or its host or the network is "
                      "gone): the job ends here. The databases hold every evaluation that finished; go on with %s "
                      "--resume (with these ranks or others)",
                      r, hosts_[static_cast<size_t>(r)].c_str(), silent, options_.command.c_str());
        failure_ = text;
        std::fprintf(stderr, "%s\n", text);
        if (options_.stop) *options_.stop = true;
      }
    }
    for (auto &r : relays) ::close(r.second.fd);
  }
};

}  // namespace

std::unique_ptr<Farm> Farm::join(const FarmOptions &options) {
  auto farm = std::make_unique<MpiFarm>(options);
  farm->start();
  return farm;
}

#endif

}  // namespace ks
