// The search's parts: the archive (insertion, cells, migration), parent sampling
// within statistical bounds, the mutator's validity, the configuration's errors, the
// run database's refusals and a full disk, and whole searches on the simulated queue:
// deterministic, and resumed after kill -9 at twenty random moments with nothing
// lost, nothing repeated and the archive of an uninterrupted run.
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "evolve/isolate.h"
#include "evolve/search/archive.h"
#include "evolve/search/artifacts.h"
#include "evolve/search/config.h"
#include "evolve/search/genome.h"
#include "evolve/search/mutator.h"
#include "evolve/search/run_db.h"
#include "evolve/search/search.h"
#include "evolve/search/sketch.h"
#include "passes/lower.h"
#include "simulated_queue.h"
#include "test_util.h"

namespace ks {
namespace {

std::string temp_path(const std::string &name) {
  std::string path =
      (std::filesystem::temp_directory_path() / ("ks_evolve_" + std::to_string(::getpid()) + "_" + name)).string();
  std::filesystem::remove_all(path);
  return path;
}

// ---- archive ----------------------------------------------------------------------

TEST(Archive, BinsAreFixedEdges) {
  std::vector<double> edges = {2, 3, 4};
  EXPECT_EQ(bin_of(1, edges), 0);
  EXPECT_EQ(bin_of(2, edges), 1);
  EXPECT_EQ(bin_of(3.5, edges), 2);
  EXPECT_EQ(bin_of(4, edges), 3);
  EXPECT_EQ(bin_of(400, edges), 3);
}

TEST(Archive, KeepsTheFastestCandidatePerCell) {
  Archive a(2, {2, 3, 4}, {32, 256});
  Cell cell = a.cell_of(3, 100);
  EXPECT_EQ(cell, (Cell{2, 1}));
  EXPECT_TRUE(a.add(0, {"slow", 1.5}, cell));
  EXPECT_FALSE(a.add(0, {"slower", 1.2}, cell)) << "a slower candidate does not replace the elite";
  EXPECT_EQ(a.grid(0).at(cell).id, "slow");
  EXPECT_TRUE(a.add(0, {"fast", 2.5}, cell));
  EXPECT_EQ(a.grid(0).at(cell).id, "fast");
  EXPECT_EQ(a.members(0).size(), 3u) << "every correct candidate is a member";
  EXPECT_FALSE(a.add(0, {"fast", 9.0}, cell)) << "a candidate enters an island once";
  EXPECT_TRUE(a.grid(1).empty()) << "islands are apart";
  EXPECT_TRUE(a.add(0, {"other", 1.1}, a.cell_of(1, 1024)));
  EXPECT_EQ(a.grid(0).size(), 2u);
  EXPECT_EQ(a.best().id, "fast");
  a.set_speedup("fast", 1.0);  // timed again
  EXPECT_EQ(a.best().id, "other");
}

TEST(Archive, MigratesTheBestAroundTheRingOnce) {
  Archive a(3, {2, 3, 4}, {32, 256});
  a.add(0, {"a1", 3.0}, {0, 0});
  a.add(0, {"a2", 2.0}, {1, 0});
  a.add(0, {"a3", 1.0}, {2, 0});
  a.add(1, {"b1", 5.0}, {0, 0});
  a.add(2, {"a1", 3.0}, {0, 0});  // already on island 2: not a migrant of island 1
  a.take_changes();
  int arrived = a.migrate(2);
  // Island 0's two best go to island 1: a1 is slower than b1 in cell (0, 0) and stays
  // a member only; a2 takes cell (1, 0). b1 goes to island 2 and beats a1 there.
  // Island 2's a1 would go to island 0, which has it: skipped.
  EXPECT_EQ(arrived, 2);
  EXPECT_EQ(a.grid(1).at({1, 0}).id, "a2");
  EXPECT_TRUE(a.grid(1).at({1, 0}).migrant);
  EXPECT_EQ(a.grid(1).at({0, 0}).id, "b1");
  EXPECT_EQ(a.grid(2).at({0, 0}).id, "b1");
  EXPECT_EQ(a.members(0).size(), 3u) << "a1 was already on island 0";
  EXPECT_FALSE(a.take_changes().empty()) << "the database hears of every change";
  // Migrants never migrate again: of island 1's elites only b1 may leave, and
  // island 2 has it; a2 stays where it migrated to.
  a.migrate(5);
  EXPECT_EQ(a.grid(2).count({1, 0}), 0u) << "a2, a migrant on island 1, travelled on";
}

TEST(Archive, ParentsFollowTheSamplingRatios) {
  Archive a(1, {2, 3, 4}, {32, 256});
  for (int i = 0; i < 8; ++i) a.add(0, {"e" + std::to_string(i), 1.0 + i}, {i % 4, i / 4});
  for (int i = 0; i < 24; ++i) a.add(0, {"m" + std::to_string(i), 0.5}, {i % 4, i / 4 % 2});  // no elites
  Rng rng(7);
  std::map<ParentPick, int> picks;
  std::map<std::string, int> chosen;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    ParentPick pick;
    chosen[*a.choose_parent(0, rng, 0.7, 0.2, 0.1, &pick)]++;
    ++picks[pick];
  }
  // Binomial standard deviations are at most 0.33% at n = 20000: 1.5% is 4.5 of them.
  EXPECT_NEAR(picks[ParentPick::Exploit] / double(n), 0.7, 0.015);
  EXPECT_NEAR(picks[ParentPick::Explore] / double(n), 0.2, 0.015);
  EXPECT_NEAR(picks[ParentPick::Uniform] / double(n), 0.1, 0.015);
  EXPECT_GT(chosen["e7"], chosen["e0"] * 3) << "exploitation favours the best elite";
  int members = 0;
  for (int i = 0; i < 24; ++i) members += chosen["m" + std::to_string(i)];
  EXPECT_GT(members, 0) << "uniform picks reach members that are no elite";
  Archive empty(1, {2}, {2});
  ParentPick pick;
  EXPECT_FALSE(empty.choose_parent(0, rng, 0.7, 0.2, 0.1, &pick)) << "no parent on an empty island";
}

TEST(Archive, InspirationsAreTopAndDiverseFromTheIsland) {
  Archive a(2, {2, 3, 4}, {32, 256});
  for (int i = 0; i < 8; ++i) a.add(0, {"e" + std::to_string(i), 1.0 + i}, {i % 4, i / 4});
  a.add(1, {"elsewhere", 100}, {0, 0});
  Rng rng(3);
  std::vector<std::string> got = a.inspirations(0, "e7", 4, rng);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0], "e6") << "the best besides the parent first";
  EXPECT_EQ(got[1], "e5");
  for (const std::string &id : got) {
    EXPECT_NE(id, "e7") << "not the parent";
    EXPECT_NE(id, "elsewhere") << "from the same island only";
  }
}

// ---- mutator ------------------------------------------------------------------------

// From every example's naive kernel, from random schedules of it and from its
// sketches, the mutator's proposals print, parse back to the same text and replay.
TEST(Mutator, OnlyYieldsSchedulesThatParseAndReplay) {
  const runtime::DeviceInfo device = test::simulated_device();
  Mutator mutator({});
  int proposals = 0;
  std::map<std::string, int> kinds;
  for (const std::string &path : test::example_paths()) {
    Graph graph = frontend::elaborate(frontend::load_spec(path), frontend::SizeSet::Check, {});
    Program naive = lower(graph);
    // Seeded by the file's name, not its path: the same draws in every checkout.
    Rng rng(std::hash<std::string>{}(std::filesystem::path(path).filename().string()));
    // The other examples' tuned schedules on PoCL, for the transfer mutation.
    auto library = std::make_shared<const std::vector<LibraryStage>>(
        fitting_stages(graph, read_library(std::string(KS_SOURCE_DIR) + "/bench/tuned/pocl", graph.name)));
    for (int parent = 0; parent < 6; ++parent) {
      CandidateView view;
      view.schedule = parent == 0  ? Schedule{}
                      : parent < 3 ? random_schedule(naive, rng, 4)
                                   : sample_sketch(graph, device, rng)->schedule;
      view.speedup = 1;
      CandidateView mate;
      mate.schedule = parent % 2 ? random_schedule(naive, rng, 4) : sample_sketch(graph, device, rng)->schedule;
      mate.speedup = 2;
      ProposalContext context{graph, device, view, {mate}, {}, library};
      for (int i = 0; i < 6; ++i) {
        std::optional<Proposal> p = mutator.propose(context, rng);
        if (!p) continue;
        ++proposals;
        ++kinds[p->note.substr(0, p->note.find(':'))];
        std::string text = print_schedule(p->schedule);
        Schedule back = parse_schedule(test::source(text, "proposal.sched"));
        EXPECT_EQ(print_schedule(back), text);
        Replayed r = replay(graph, back);
        EXPECT_TRUE(r.program) << path << ": " << p->note << " gave a schedule the IR refuses: " << r.refusal << "\n"
                               << text;
      }
    }
  }
  EXPECT_GT(proposals, 500);
  // A compute_at can rarely move (the stages between must not read the producer):
  // MovesAComputeAtToAnotherConsumer checks that edit on a parent where it can.
  for (const auto &[kind, weight] : default_mutation_weights())
    if (kind != "compute_at") {
      EXPECT_GT(kinds[kind], 0) << "no '" << kind << "' mutation among " << proposals << " proposals";
    }
}

// A proposal that leaves a few work-items the whole of a large problem (a mutation
// that removed a tile's bindings: one H200 search's worker ran such a kernel for
// minutes, holding the device's lock) is refused before it costs device time;
// every tuned H100 schedule, at its sizes, is not.
TEST(Replay, RefusesProgramsThatLeaveTheDeviceIdle) {
  runtime::DeviceInfo h100 = test::simulated_device();
  h100.gpu = true;
  h100.compute_units = 132;
  h100.async_copies = true;  // NVIDIA's OpenCL on 9.0: the tuned GEMMs' rings of copies
  const std::map<std::string, std::string> sizes =
      frontend::read_sizes_file(std::string(KS_SOURCE_DIR) + "/bench/sizes_gpu.txt");
  auto graph_of = [&](const std::string &name) {
    frontend::SizeOverrides overrides;
    frontend::parse_size_assignments(sizes.at(name), &overrides);
    return frontend::elaborate(frontend::load_spec(std::string(KS_SOURCE_DIR) + "/examples/" + name + ".ks"),
                               frontend::SizeSet::Default, overrides);
  };
  const Graph long_k = graph_of("matmul_long_k");
  Schedule idle = parse_schedule(test::source(R"(rewrite rfactor c.k 16384 -> c_rf ko ki
split c_rf.i 64 -> io ii
split c_rf.j 128 -> jo ji
reorder c_rf ko io jo ii ji
bind c_rf.ko group.z
)",
                                              "idle.sched"));
  Replayed r = replay(long_k, idle, &h100);
  EXPECT_FALSE(r.program);
  EXPECT_NE(r.refusal.find("the kernels leave the device mostly idle"), std::string::npos) << r.refusal;
  EXPECT_TRUE(replay(long_k, idle).program) << "without a device, the IR alone: it replays";
  EXPECT_TRUE(replay(long_k, {}, &h100).program) << "the naive kernel is the baseline";
  int tuned = 0;
  for (const auto &entry :
       std::filesystem::directory_iterator(std::string(KS_SOURCE_DIR) + "/bench/tuned/h100-opencl")) {
    const std::string name = entry.path().stem().string();
    if (entry.path().extension() != ".sched" || !sizes.count(name)) continue;
    Replayed t = replay(graph_of(name), load_schedule(entry.path().string()), &h100);
    EXPECT_TRUE(t.program) << name << ": " << t.refusal;
    ++tuned;
  }
  EXPECT_GE(tuned, 20);
  // Without cp.async, a ring of copies is refused before any device time.
  runtime::DeviceInfo no_async = h100;
  no_async.async_copies = false;
  Replayed ring =
      replay(graph_of("matmul"), load_schedule(std::string(KS_SOURCE_DIR) + "/bench/tuned/h100-opencl/matmul.sched"),
             &no_async);
  EXPECT_FALSE(ring.program);
  EXPECT_NE(ring.refusal.find("async_copy needs asynchronous global-to-local copies"), std::string::npos)
      << ring.refusal;
  Replayed hand = replay(long_k, load_schedule(std::string(KS_SOURCE_DIR) + "/examples/matmul_long_k.sched"), &h100);
  EXPECT_TRUE(hand.program) << hand.refusal;
}

// A mutator that draws one edit alone.
Mutator only_edit(const std::string &edit) {
  std::map<std::string, double> weights = default_mutation_weights();
  for (auto &[kind, weight] : weights) weight = kind == edit ? 1.0 : 0.0;
  return Mutator(weights);
}

// The factor mutation doubles or halves an rfactor's factor too: the same loops,
// longer or shorter.
TEST(Mutator, RedrawsASplitReductionsFactor) {
  runtime::DeviceInfo device = test::simulated_device();
  Graph g = frontend::elaborate(frontend::load_spec(std::string(KS_SOURCE_DIR) + "/examples/matmul_long_k.ks"),
                                frontend::SizeSet::Default, {});
  CandidateView parent;
  parent.schedule =
      parse_schedule(test::source("rewrite rfactor c.k 1024 -> c_rf ko ki\nbind c_rf.ko group.x\n", "p.sched"));
  parent.speedup = 1;
  Mutator factor_only = only_edit("factor");
  ProposalContext context{g, device, parent, {}, {}, nullptr};
  Rng rng(4);
  std::set<int64_t> factors;
  for (int i = 0; i < 20; ++i)
    if (std::optional<Proposal> p = factor_only.propose(context, rng)) {
      ASSERT_EQ(p->schedule.rewrites.size(), 1u) << p->note;
      factors.insert(p->schedule.rewrites[0].factor);
      EXPECT_EQ(p->schedule.steps.size(), 1u) << p->note;
    }
  EXPECT_EQ(factors, (std::set<int64_t>{512, 2048}));
}

// Where the device has cp.async, toggle turns a loop's prefetched panels into one
// async_copy (2 or 3 slots), changes its slots, or turns it back; every proposal
// replays on that device. Without cp.async it never draws one.
TEST(Mutator, CopiesPanelsAheadWhereTheDeviceCan) {
  runtime::DeviceInfo device = test::simulated_device();
  device.gpu = true;
  device.max_work_group_size = 1024;
  device.local_memory_bytes = 48 * 1024;
  device.async_copies = true;
  frontend::SizeOverrides sizes;
  frontend::parse_size_assignments("N=512", &sizes);
  Graph g = frontend::elaborate(frontend::load_spec(std::string(KS_SOURCE_DIR) + "/examples/matmul.ks"),
                                frontend::SizeSet::Default, sizes);
  CandidateView parent;
  parent.schedule = load_schedule(std::string(KS_SOURCE_DIR) + "/tests/lit/inputs/matmul_128x128_k8_prefetch.sched");
  parent.speedup = 1;
  Mutator toggle = only_edit("toggle");
  Rng rng(7);
  std::set<std::string> notes;
  for (int i = 0; i < 60; ++i) {
    ProposalContext context{g, device, parent, {}, {}, nullptr};
    std::optional<Proposal> p = toggle.propose(context, rng);
    if (!p) continue;
    EXPECT_TRUE(replay(g, p->schedule, &device).program) << p->note;
    if (p->note.rfind("toggle: prefetch -> async_copy c.ko", 0) == 0) {
      notes.insert(p->note);
      EXPECT_EQ(print_schedule(p->schedule).find("prefetch"), std::string::npos) << p->note;
      parent.schedule = p->schedule;  // go on from the ring
    } else if (p->note.rfind("toggle: async_copy c.ko", 0) == 0) {
      notes.insert(p->note.substr(0, p->note.find(" -> ")) + " -> " +
                   (p->note.find("-> prefetch") != std::string::npos ? "prefetch" : "slots"));
    }
  }
  EXPECT_TRUE(notes.count("toggle: prefetch -> async_copy c.ko 2") +
              notes.count("toggle: prefetch -> async_copy c.ko 3"))
      << "prefetches made a ring";
  bool resized = false, undone = false;
  for (const std::string &n : notes) {
    resized = resized || n.find("-> slots") != std::string::npos;
    undone = undone || n.find("-> prefetch") != std::string::npos;
  }
  EXPECT_TRUE(resized && undone);
  device.async_copies = false;
  parent.schedule = load_schedule(std::string(KS_SOURCE_DIR) + "/tests/lit/inputs/matmul_128x128_k8_prefetch.sched");
  for (int i = 0; i < 30; ++i) {
    ProposalContext context{g, device, parent, {}, {}, nullptr};
    if (std::optional<Proposal> p = toggle.propose(context, rng))
      EXPECT_EQ(print_schedule(p->schedule).find("async_copy"), std::string::npos) << p->note;
  }
}

// The rewrite edit adds a softmax's online form on a GPU (its statistics are passes over
// memory there: one beats two) and never on a CPU (its logaddexp an element loses).
TEST(Mutator, AddsTheOnlineSoftmaxOnAGpuOnly) {
  Graph g = frontend::elaborate(frontend::load_spec(std::string(KS_SOURCE_DIR) + "/examples/softmax.ks"),
                                frontend::SizeSet::Default, {});
  CandidateView parent;  // not the naive kernel, whose children are all sketches
  parent.schedule = load_schedule(std::string(KS_SOURCE_DIR) + "/examples/softmax.sched");
  parent.speedup = 1;
  Mutator rewrite = only_edit("rewrite");
  auto online_drawn = [&](bool gpu) {
    runtime::DeviceInfo device = test::simulated_device();
    device.gpu = gpu;
    Rng rng(3);
    int online = 0;
    for (int i = 0; i < 40; ++i)
      if (std::optional<Proposal> p = rewrite.propose({g, device, parent, {}, {}, nullptr}, rng)) {
        EXPECT_TRUE(replay(g, p->schedule, &device).program) << p->note;
        online += p->note.find("rewrite: added rewrite online_softmax total") != std::string::npos;
      }
    return online;
  };
  EXPECT_GT(online_drawn(true), 0);
  EXPECT_EQ(online_drawn(false), 0);
}

// A producer computed in one consumer's kernel moves to another's, at that
// consumer's innermost bound loop (softmax's row maximum from the sum's place in the
// output's kernel to the output's own loop), and the schedule still replays.
TEST(Mutator, MovesAComputeAtToAnotherConsumer) {
  const runtime::DeviceInfo device = test::simulated_device();
  Graph graph = frontend::elaborate(frontend::load_spec(std::string(KS_SOURCE_DIR) + "/examples/softmax.ks"),
                                    frontend::SizeSet::Default, {});
  CandidateView parent;
  parent.schedule = parse_schedule(
      test::source("inline e\nbind row_max.n group.x\nbind total.n group.x\nbind y.n group.x\ncompute_at total y.n\n"
                   "compute_at row_max total.n\n",
                   "parent.sched"));
  parent.speedup = 1;
  Mutator mutator = only_edit("compute_at");
  Rng rng(1);
  std::optional<Proposal> p = mutator.propose({graph, device, parent, {}, {}, nullptr}, rng);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->note, "compute_at: compute_at row_max total.n -> compute_at row_max y.n");
  EXPECT_NE(print_schedule(p->schedule).find("compute_at row_max y.n"), std::string::npos);
  EXPECT_TRUE(replay(graph, p->schedule).program);
}

// A mutator that draws only `kind`.
Mutator only(const std::string &kind) {
  std::map<std::string, double> weights;
  for (const auto &[name, weight] : default_mutation_weights()) weights[name] = name == kind ? 1.0 : 0.0;
  return Mutator(weights);
}

// matmul_gelu_softmax's GEMM stage (acc) takes the steps of gemm_bias_leaky's tuned
// schedule on the H100 (the same x @ w.T), its other stages keep the parent's, and
// the result replays; without a library the transfer has nothing to draw.
TEST(Mutator, TransfersAStageFromAnotherProblemsSchedule) {
  const runtime::DeviceInfo device = test::simulated_device();
  Graph graph =
      frontend::elaborate(frontend::load_spec(std::string(KS_SOURCE_DIR) + "/examples/matmul_gelu_softmax.ks"),
                          frontend::SizeSet::Default, {});
  CandidateView parent;
  parent.schedule = parse_schedule(test::source(
      "inline e\ninline a\nbind row_max.m group.x\nsplit acc.m 8 -> mo mi\nbind acc.mo group.x\n", "parent.sched"));
  parent.speedup = 1;
  std::vector<LibrarySchedule> schedules;
  for (const LibrarySchedule &s : read_library(std::string(KS_SOURCE_DIR) + "/bench/tuned/h100-opencl", graph.name))
    if (s.name == "gemm_bias_leaky.sched") schedules.push_back(s);
  ASSERT_EQ(schedules.size(), 1u);
  auto library = std::make_shared<const std::vector<LibraryStage>>(fitting_stages(graph, schedules));
  ASSERT_FALSE(library->empty());
  Mutator mutator = only("transfer");
  std::set<std::string> stages;
  for (uint64_t seed = 0; seed < 8; ++seed) {
    Rng rng(seed);
    std::optional<Proposal> p = mutator.propose({graph, device, parent, {}, {}, library}, rng);
    ASSERT_TRUE(p);
    const std::string text = print_schedule(p->schedule);
    EXPECT_TRUE(replay(graph, p->schedule).program) << p->note << "\n" << text;
    EXPECT_EQ(p->note.rfind("transfer: ", 0), 0u) << p->note;
    EXPECT_NE(text.find("inline e\ninline a\nbind row_max.m group.x\n"), std::string::npos)
        << "the other stages keep the parent's steps:\n"
        << text;
    stages.insert(p->note.substr(10, p->note.find(' ', 10) - 10));
    if (p->note.rfind("transfer: acc from gemm_bias_leaky.sched", 0) == 0) {
      EXPECT_NE(text.find("split acc.m 128 -> mo mi"), std::string::npos) << text;
      EXPECT_NE(text.find("prefetch acc.w_s"), std::string::npos) << text;
      EXPECT_EQ(text.find("split acc.m 8 -> mo mi"), std::string::npos) << "the parent's acc steps are replaced";
    }
  }
  EXPECT_TRUE(stages.count("acc")) << "the GEMM stage is among those transferred";
  Rng rng(1);
  EXPECT_FALSE(mutator.propose({graph, device, parent, {}, {}, nullptr}, rng)) << "no library, no transfer";
}

TEST(Library, ReadsEveryScheduleButTheRunsOwnAndRefusesWhatIsNotOne) {
  const std::string dir = temp_path("library");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/b.sched") << "inline e\n";
  std::ofstream(dir + "/a.sched") << "# a comment\nsplit y.n 4 -> no ni\n";
  std::ofstream(dir + "/own.sched") << "inline a\n";
  std::ofstream(dir + "/notes.txt") << "not a schedule";
  std::vector<LibrarySchedule> got = read_library(dir, "own");
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].name, "a.sched");
  EXPECT_EQ(print_schedule(got[0].schedule), "split y.n 4 -> no ni\n");
  EXPECT_EQ(got[1].name, "b.sched");
  EXPECT_EQ(test::user_error([&] { read_library(dir + "/none", "own"); }),
            "error: the schedule library '" + dir + "/none' is not a folder (mutator.library, --library)");
  std::ofstream(dir + "/c.sched") << "inline e\nsplit y.n -> a b\n";
  EXPECT_EQ(test::user_error([&] { read_library(dir, "own"); }).rfind(dir + "/c.sched:2:", 0), 0u)
      << test::user_error([&] { read_library(dir, "own"); });
  std::filesystem::remove_all(dir);
}

// What a transfer can draw: of each library schedule, the stages the graph has whose
// steps replay on it on their own (softmax's tuned steps fit matmul_gelu_softmax's
// softmax stages; a stage another spec names alike but shapes otherwise, a stage the
// graph lacks, and a list of steps already drawn from another file do not).
TEST(Library, FitsOnlyTheStagesThatReplayOnTheGraph) {
  Graph graph =
      frontend::elaborate(frontend::load_spec(std::string(KS_SOURCE_DIR) + "/examples/matmul_gelu_softmax.ks"),
                          frontend::SizeSet::Default, {});
  auto schedule = [](const std::string &text) { return parse_schedule(test::source(text, "library.sched")); };
  std::vector<LibrarySchedule> library = {
      {"a.sched",
       schedule("split acc.m 64 -> mo mi\nbind acc.mo group.y\nsplit y.q 4 -> qo qi\nsplit z.n 4 -> no ni\n")},
      {"b.sched", schedule("split acc.m 64 -> mo mi\nbind acc.mo group.y\nbind total.m group.x\n")},
      {"c.sched", schedule("split y.q 4 -> qo qi\n")}};
  std::vector<LibraryStage> got = fitting_stages(graph, library);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].name, "a.sched");
  EXPECT_EQ(got[0].stage, "acc");
  EXPECT_EQ(got[0].steps.size(), 2u);
  EXPECT_EQ(got[0].of, 2u);
  EXPECT_EQ(got[1].name, "b.sched") << "b's acc steps are a's: only its total stage is new";
  EXPECT_EQ(got[1].stage, "total");
  // The tuned library of the H100: gemm_bias_leaky's GEMM is among what fits, whole.
  bool gemm = false;
  for (const LibraryStage &s :
       fitting_stages(graph, read_library(std::string(KS_SOURCE_DIR) + "/bench/tuned/h100-opencl", graph.name))) {
    Schedule alone{s.steps};
    EXPECT_TRUE(replay(graph, alone).program) << s.name << " " << s.stage;
    if (s.name == "gemm_bias_leaky.sched" && s.stage == "acc") gemm = s.steps.size() == s.of;
  }
  EXPECT_TRUE(gemm) << "gemm_bias_leaky's acc steps all fit matmul_gelu_softmax's GEMM";
}

// ---- configuration ----------------------------------------------------------------

std::string config_error(const std::string &text) {
  return test::user_error([&] { parse_config(text, "run.toml"); });
}

TEST(Config, ErrorsNameTheKeyAndLine) {
  EXPECT_EQ(config_error("[search]\nbudgt = 3\n"),
            "run.toml:2:9: error: unknown key 'search.budgt'; [search] has budget, island_proposers, minutes, "
            "proposers, rewrites, seed, "
            "target_speedup, time_limit_s, workers");
  EXPECT_EQ(config_error("[search]\nbudget = \"many\"\n"), "run.toml:2:10: error: search.budget must be an integer");
  EXPECT_EQ(config_error("[search]\nbudget = 7.7e26\n"), "run.toml:2:10: error: search.budget must be an integer");
  EXPECT_EQ(config_error("[search]\nbudget = 0\n"),
            "run.toml:2:10: error: search.budget must be between 1 and 10000000, not 0");
  EXPECT_EQ(config_error("[serch]\nbudget = 3\n").rfind("run.toml:1:1: error: unknown table 'serch'; tables are", 0),
            0u);
  EXPECT_EQ(config_error("[archive]\nfeatures = [\"kernels\", \"colour\"]\n")
                .rfind("run.toml:2:24: error: unknown feature 'colour'; features are kernels, max_group_size, ", 0),
            0u);
  EXPECT_EQ(config_error("[archive]\nbins = { kernels = [3, 2] }\n"),
            "run.toml:2:24: error: archive.bins.kernels must increase");
  EXPECT_EQ(config_error("[search]\nproposers = { llm = 1.0 }\n"),
            "run.toml:2:21: error: unknown search.proposers 'llm'; they are mutator, random, llm-schedule, llm-kernel");
  // The model's key is never in a file: [llm] names the variable that holds it.
  EXPECT_EQ(config_error("[llm]\nkey_variable = \"sk-abc = 1\"\n"),
            "run.toml:2:16: error: llm.key_variable names an environment variable (the key itself never goes in a "
            "file)");
  EXPECT_EQ(config_error("[llm]\ntemperature = 3\n").rfind("run.toml:2:15: error: llm.temperature", 0), 0u)
      << config_error("[llm]\ntemperature = 3\n");
  EXPECT_EQ(config_error("[search\n").rfind("run.toml:1:8: error: ", 0), 0u) << config_error("[search\n");
  EXPECT_EQ(config_error("[evaluation]\ngive_up = 0.5\n"),
            "run.toml:2:11: error: evaluation.give_up must be 0 (time every candidate) or at least 1 (a multiple of "
            "the best time)");
  EXPECT_EQ(config_error("[sampling]\nexploit = 0\nexplore = 0\nuniform = 0\n"),
            "run.toml: error: sampling: exploit, explore and uniform are all zero");
}

// The precision is the user's word: fp32-accurate unless a run says tf32, and
// nothing else.
TEST(Config, ThePrecisionIsFp32UnlessSaid) {
  EXPECT_EQ(parse_config("", "run.toml").precision, "fp32");
  EXPECT_EQ(parse_config("[evaluation]\nprecision = \"tf32\"\n", "run.toml").precision, "tf32");
  EXPECT_EQ(config_error("[evaluation]\nprecision = \"fp16\"\n").rfind("run.toml:2:13: error: evaluation.precision", 0),
            0u)
      << config_error("[evaluation]\nprecision = \"fp16\"\n");
  EXPECT_NE(parse_config("[evaluation]\nprecision = \"tf32\"\n", "run.toml").to_toml().find("precision = 'tf32'"),
            std::string::npos);
}

// What Debian's toml++ 3.3.0 would reach undefined behaviour on (found by
// tests/fuzz/fuzz_config) is refused before it parses: malformed UTF-8, and the
// characters its whitespace table misreads; others pass.
TEST(Config, TextTomlppMisreadsIsRefused) {
  EXPECT_EQ(config_error("[llm]\nmodel = \"a\xcc\xaa\"\n"),
            "run.toml:2:11: error: character U+032A is refused: Debian's toml++ 3.3.0 misreads it; in a string, write "
            "\\u032A");
  EXPECT_EQ(config_error("s = \"\"\"\\\n\xc2\xa7\"\"\"\n").rfind("run.toml:2:1: error: character U+00A7", 0), 0u);
  EXPECT_EQ(config_error("[search]\n\xef\xb8\x80\n").rfind("run.toml:2:1: error: character U+FE00", 0), 0u);
  EXPECT_EQ(config_error("[search]\nbudget = 3 # \xff\n"), "run.toml:2:14: error: the file is not UTF-8 (byte 255)");
  EXPECT_EQ(config_error("# \xc0\x80\n"), "run.toml:1:3: error: the file is not UTF-8 (byte 192)");
  // Written as an escape it passes; CJK, outside the holes, as it is.
  EXPECT_EQ(parse_config("[llm]\nmodel = \"m\\u00e9\"\n", "run.toml").llm.model, "m\u00e9");
  EXPECT_EQ(parse_config("[llm]\nmodel = \"\xe6\xa8\xa1\"\n", "run.toml").llm.model, "\xe6\xa8\xa1");
}

// An ensemble of models: each member its model, URL (or [llm]'s), weight and cap.
TEST(Config, AnEnsembleOfModels) {
  EvolveConfig c = parse_config(
      "[llm]\nurl = \"http://a:8000/v1\"\nrun_deadline_s = 600\n"
      "ensemble = [{ model = \"small\", weight = 0.7 }, { url = \"http://b/v1\", model = \"big\", weight = 0.3, "
      "in_flight = 2 }]\n",
      "run.toml");
  ASSERT_EQ(c.llm.ensemble.size(), 2u);
  EXPECT_EQ(c.llm.ensemble[0].model, "small");
  EXPECT_EQ(c.llm.ensemble[0].url, "");
  EXPECT_EQ(c.llm.ensemble[0].in_flight, 4);
  EXPECT_EQ(c.llm.ensemble[1].url, "http://b/v1");
  EXPECT_EQ(c.llm.ensemble[1].weight, 0.3);
  EXPECT_EQ(c.llm.ensemble[1].in_flight, 2);
  EXPECT_EQ(c.llm.run_deadline_s, 600);
  EXPECT_TRUE(c.llm.configured());
  EvolveConfig back = parse_config(c.to_toml(), "printed.toml");
  EXPECT_EQ(back.to_toml(), c.to_toml());
  EXPECT_EQ(back.llm.ensemble.size(), 2u);
  EXPECT_EQ(config_error("[llm]\nensemble = \"big\"\n").rfind("run.toml:2:12: error: llm.ensemble is a list", 0), 0u)
      << config_error("[llm]\nensemble = \"big\"\n");
  EXPECT_EQ(config_error("[llm]\nensemble = [{ weight = 1 }]\n"),
            "run.toml:2:13: error: a member of llm.ensemble needs its model");
  EXPECT_EQ(config_error("[llm]\nensemble = [{ model = \"m\", colour = 1 }]\n"),
            "run.toml:2:37: error: unknown key 'colour' in a member of llm.ensemble; a member has url, model, weight, "
            "in_flight");
  EXPECT_EQ(config_error("[llm]\nensemble = [{ model = \"m\", weight = -1 }]\n"),
            "run.toml:2:37: error: llm.ensemble.weight must be between 0 and 1e+06, not -1");
  EXPECT_EQ(config_error("[llm]\nensemble = [{ model = \"m\", weight = 0 }]\n"),
            "run.toml: error: llm.ensemble: no model has a positive weight");
}

TEST(Config, IslandsMayHaveTheirOwnProposers) {
  EvolveConfig c = parse_config(
      "[search]\nisland_proposers = [{ mutator = 1.0 }, { llm-kernel = 0.5, mutator = 0.5 }]\n", "run.toml");
  ASSERT_EQ(c.island_proposers.size(), 2u);
  EXPECT_EQ(c.proposers_of(1).at("llm-kernel"), 0.5);
  EXPECT_EQ(c.proposers_of(3), c.proposers) << "islands past the list take search.proposers";
  EXPECT_EQ(parse_config(c.to_toml(), "printed.toml").to_toml(), c.to_toml());
  EXPECT_EQ(config_error("[search]\nisland_proposers = [{ oracle = 1.0 }]\n"),
            "run.toml:2:32: error: unknown search.island_proposers 'oracle'; they are mutator, random, llm-schedule, "
            "llm-kernel");
  EXPECT_EQ(config_error("[search]\nisland_proposers = [{}, {}, {}, {}, {}]\n"),
            "run.toml: error: search.island_proposers has 5 mixes for 4 islands");
  EXPECT_EQ(config_error("[search]\nisland_proposers = [{ mutator = 0 }]\n"),
            "run.toml: error: search.island_proposers: the mix of island 0 has no proposer with a positive weight");
}

TEST(Config, PrintsEveryKeyAndReadsItBack) {
  EvolveConfig c = parse_config(
      "[search]\nbudget = 50\nproposers = { mutator = 0.8, random = 0.2 }\n"
      "[archive]\nislands = 3\nfeatures = [\"barriers\", \"kernels\"]\n"
      "[mutator]\nweights = { swap = 0.5 }\nlibrary = \"bench/tuned/pocl\"\n",
      "run.toml");
  EXPECT_EQ(c.budget, 50);
  EXPECT_EQ(c.islands, 3);
  EXPECT_EQ(c.edges("barriers"), default_bins("barriers"));
  EvolveConfig back = parse_config(c.to_toml(), "printed.toml");
  EXPECT_EQ(back.to_toml(), c.to_toml());
  EXPECT_EQ(back.proposers, c.proposers);
  EXPECT_EQ(back.mutations.at("swap"), 0.5);
  EXPECT_EQ(back.library, "bench/tuned/pocl");
  EXPECT_EQ(back.features, (std::vector<std::string>{"barriers", "kernels"}));
  // The model's budgets print resolved: three calls an evaluation, and the tokens
  // those calls may take.
  EXPECT_EQ(back.llm.max_calls, 150);
  EXPECT_EQ(back.llm.max_run_tokens, 150 * (6000 + 4096));
}

TEST(Config, TheModelsBudgets) {
  EvolveConfig c = parse_config("[search]\nbudget = 8\n[llm]\nmax_run_tokens = 5000\nmax_duplicates = 2\n", "run.toml");
  EXPECT_EQ(c.llm_max_calls(), 24);
  EXPECT_EQ(c.llm_max_run_tokens(), 5000);
  EXPECT_EQ(c.llm.max_duplicates, 2);
  EXPECT_EQ(parse_config("[llm]\nmax_calls = 0\n", "run.toml").llm_max_calls(), 0);
  EXPECT_EQ(config_error("[llm]\nmax_calls = -1\n"),
            "run.toml:2:13: error: llm.max_calls must be between 0 and 1000000000, not -1");
  EXPECT_EQ(config_error("[llm]\nmax_calls = 2.5\n"), "run.toml:2:13: error: llm.max_calls must be an integer");
  EXPECT_EQ(config_error("[llm]\nmax_run_tokens = \"lots\"\n"),
            "run.toml:2:18: error: llm.max_run_tokens must be an integer");
  EXPECT_EQ(config_error("[llm]\nmax_duplicates = 0\n"),
            "run.toml:2:18: error: llm.max_duplicates must be between 1 and 1000000, not 0");
}

// ---- run database -----------------------------------------------------------------

TEST(RunDatabase, RefusesWhatItCannotRead) {
  const std::string garbage = temp_path("garbage.db");
  std::ofstream(garbage) << "not a database at all, just text that is long enough to be looked at by SQLite.....";
  EXPECT_EQ(test::user_error([&] { RunDatabase db(garbage); }),
            "error: cannot use the run database '" + garbage + "': it is not an SQLite database");
  const std::string other = temp_path("other.db");
  sqlite3 *raw = nullptr;
  sqlite3_open(other.c_str(), &raw);
  sqlite3_exec(raw, "CREATE TABLE t (x INTEGER)", nullptr, nullptr, nullptr);
  sqlite3_close(raw);
  EXPECT_EQ(test::user_error([&] { RunDatabase db(other); }),
            "error: '" + other + "' is an SQLite database, but not a kernelsmith run database");
  const std::string newer = temp_path("newer.db");
  { RunDatabase db(newer); }
  sqlite3_open(newer.c_str(), &raw);
  sqlite3_exec(raw, "PRAGMA user_version = 99", nullptr, nullptr, nullptr);
  sqlite3_close(raw);
  EXPECT_EQ(test::user_error([&] { RunDatabase db(newer); }),
            "error: the run database '" + newer +
                "' has format version 99; this ksmith reads version 2 and older (a newer ksmith wrote it)");
  for (const std::string &p : {garbage, other, newer}) std::filesystem::remove(p);
}

// A database an older ksmith wrote (version 1: no kernel bodies) opens, gains the
// column, and keeps its candidates.
TEST(RunDatabase, AVersionOneDatabaseIsMigrated) {
  const std::string path = temp_path("v1.db");
  int64_t run = 0;
  {
    RunDatabase db(path);
    RunRow r;
    r.spec_path = "s.ks", r.kernel = "k", r.spec_text = "", r.device = "d", r.target = "opencl", r.sizes = "";
    r.config = "{}", r.status = "running";
    run = db.add_run(r);
    CandidateRow c;
    c.run = run, c.id = "00000000000000aa", c.schedule = "split y.n 4 -> a b", c.proposer = "mutator";
    db.put_candidate(c);
  }
  sqlite3 *raw = nullptr;
  sqlite3_open(path.c_str(), &raw);
  ASSERT_EQ(
      sqlite3_exec(raw, "ALTER TABLE candidates DROP COLUMN body; PRAGMA user_version = 1", nullptr, nullptr, nullptr),
      SQLITE_OK)
      << sqlite3_errmsg(raw);
  sqlite3_close(raw);
  RunDatabase db(path);
  std::vector<CandidateRow> rows = db.candidates(run);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].schedule, "split y.n 4 -> a b");
  EXPECT_EQ(rows[0].body, "");
  CandidateRow body = rows[0];
  body.id = "00000000000000bb", body.schedule = "", body.body = "/* ksmith plan ... */";
  db.put_candidate(body);
  rows = db.candidates(run);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].id == body.id ? rows[0].body : rows[1].body, "/* ksmith plan ... */");
  std::filesystem::remove(path);
}

// A candidate's status is one of the names the database writes, read back as it was
// written; a database whose status is another says which candidate and what it holds.
TEST(RunDatabase, CandidateStatusesRoundTripAndAnUnknownOneIsAClearError) {
  const std::string path = temp_path("status.db");
  const std::vector<CandidateStatus> all = {
      CandidateStatus::Pending,   CandidateStatus::Refused, CandidateStatus::Correct, CandidateStatus::Slow,
      CandidateStatus::Incorrect, CandidateStatus::Flagged, CandidateStatus::Failed,  CandidateStatus::Timeout};
  std::set<std::string> names;
  for (CandidateStatus s : all) {
    names.insert(status_name(s));
    EXPECT_EQ(parse_status(status_name(s)), s) << status_name(s);
  }
  EXPECT_EQ(names.size(), all.size());
  EXPECT_FALSE(parse_status("running"));
  int64_t run = 0;
  {
    RunDatabase db(path);
    RunRow r;
    r.spec_path = "s.ks", r.kernel = "k", r.device = "d", r.target = "opencl", r.config = "{}", r.status = "running";
    run = db.add_run(r);
    for (size_t i = 0; i < all.size(); ++i) {
      CandidateRow c;
      c.run = run, c.id = "0000000000000" + std::to_string(100 + i), c.status = all[i];
      db.put_candidate(c);
    }
    std::vector<CandidateRow> rows = db.candidates(run);
    std::set<CandidateStatus> back;
    for (const CandidateRow &c : rows) back.insert(c.status);
    EXPECT_EQ(back.size(), all.size());
  }
  sqlite3 *raw = nullptr;
  sqlite3_open(path.c_str(), &raw);
  sqlite3_exec(raw, "UPDATE candidates SET status = 'splendid' WHERE id = '0000000000000102'", nullptr, nullptr,
               nullptr);
  sqlite3_close(raw);
  RunDatabase db(path);
  EXPECT_EQ(test::user_error([&] { db.candidates(run); }),
            "error: the run database holds candidate 0000000000000102 of unknown status 'splendid'");
  std::filesystem::remove(path);
}

// ---- whole searches on the simulated queue -----------------------------------------

SearchSetup simulated_setup(const std::string &dir, int budget) {
  SearchSetup s;
  s.spec_path = std::string(KS_SOURCE_DIR) + "/examples/softmax.ks";
  s.config.budget = budget;
  s.config.islands = 3;
  s.config.generation = 3;
  s.config.interval = 2;
  s.config.final_top = 3;
  s.config.sizes = "N=64,D=512";
  s.ksmith = "simulated";
  s.work_dir = dir;
  s.device = test::simulated_device();
  s.target = "opencl";
  return s;
}

// What must be the same between two runs of one search: every candidate with its
// lineage and outcome in order, and the archive.
std::string fingerprint(RunDatabase &db, int64_t run) {
  std::ostringstream out;
  for (const CandidateRow &c : db.candidates(run))
    out << c.seq << " " << c.id << " " << c.eval_seq << " " << status_name(c.status) << " " << c.parent << " "
        << c.island << " " << c.speedup << " " << c.retimed_speedup << " " << c.note << "\n";
  for (int island = 0; island < 3; ++island) {
    std::vector<std::pair<Elite, Cell>> members;
    std::map<Cell, Elite> grid;
    db.load_island(run, island, &members, &grid);
    for (const auto &[e, cell] : members) out << "member " << island << " " << e.id << " " << e.migrant << "\n";
    for (const auto &[cell, e] : grid)
      out << "cell " << island << " " << cell.a << "," << cell.b << " " << e.id << " " << e.speedup << "\n";
  }
  return out.str();
}

TEST(Search, RunsToItsBudgetAndIsDeterministic) {
  const test::RunFolder folder("det");
  const std::string &dir = folder.dir;
  std::atomic<bool> stop{false};
  test::NullProgress progress;
  std::string prints[2];
  for (int i = 0; i < 2; ++i) {
    RunDatabase db(dir + "/run" + std::to_string(i) + ".db");
    test::SimulatedQueue queue;
    SearchOutcome out = run_search(db, std::nullopt, simulated_setup(dir, 30), queue, progress, stop);
    EXPECT_EQ(out.status, "finished") << out.message;
    EXPECT_EQ(out.message, "the budget of 30 evaluations is spent");
    std::vector<CandidateRow> candidates = db.candidates(out.run);
    int evaluated = 0, correct = 0;
    std::set<int64_t> seqs;
    for (const CandidateRow &c : candidates) {
      if (c.eval_seq) {
        EXPECT_TRUE(seqs.insert(c.eval_seq).second) << "evaluated twice: " << c.id;
      }
      evaluated += c.eval_seq > 0;
      correct += c.status == CandidateStatus::Correct;
      if (c.proposer != "naive" && c.status != CandidateStatus::Refused) {
        EXPECT_FALSE(c.parent.empty()) << c.id;
      }
    }
    EXPECT_EQ(evaluated, 30);
    EXPECT_GT(correct, 15);
    EXPECT_EQ(*seqs.rbegin(), 30);
    prints[i] = fingerprint(db, out.run);
    EXPECT_EQ(db.integrity_check(), "ok");
  }
  EXPECT_EQ(prints[0], prints[1]) << "the same seed, the same search";
}

// A whole search of setup on queue into db, its progress unseen.
SearchOutcome run_simulated(RunDatabase &db, test::SimulatedQueue &queue, const SearchSetup &setup) {
  std::atomic<bool> stop{false};
  test::NullProgress progress;
  return run_search(db, std::nullopt, setup, queue, progress, stop);
}

// What reached the queue, in order: each job's command (paths under the run's folder
// as RUN/...) and the schedule or kernel body it names, as text.
std::string submitted_text(const test::SimulatedQueue &queue, const std::string &dir) {
  std::ostringstream out;
  for (const Job &job : queue.submitted()) {
    std::string files;
    for (const std::string &arg : job.args) {
      const bool in_run = arg.rfind(dir, 0) == 0;
      out << " " << (in_run ? "RUN" + arg.substr(dir.size()) : arg);
      if (in_run && std::filesystem::is_regular_file(arg) &&
          (arg.size() > 6 && (arg.substr(arg.size() - 6) == ".sched" || arg.substr(arg.size() - 3) == ".cl"))) {
        std::ifstream in(arg);
        files += std::string(std::istreambuf_iterator<char>(in), {});
      }
    }
    out << "\n" << files << "--\n";
  }
  return out.str();
}

// The search's behaviour held while its code is rearranged (issue 50): with the seeds
// fixed and the simulated queue answering (a learnable landscape, so the cost model
// ranks), the same jobs reach the queue in the same order as recorded in
// tests/unit/golden/search_jobs.txt. A change meant to alter what the search proposes
// records it again: KS_UPDATE_GOLDEN=1 ks_unit_tests --gtest_filter='Search.TheSameJobsReachTheQueueAsRecorded'.
TEST(Search, TheSameJobsReachTheQueueAsRecorded) {
  const test::RunFolder folder("replay");
  const std::string &dir = folder.dir;
  std::string runs[2];
  for (int i = 0; i < 2; ++i) {
    RunDatabase db(dir + "/run" + std::to_string(i) + ".db");
    test::SimulatedQueue queue(0, true);
    SearchSetup setup = simulated_setup(dir, 48);
    setup.work_dir = dir + "/w" + std::to_string(i);
    SearchOutcome out = run_simulated(db, queue, setup);
    ASSERT_EQ(out.status, "finished") << out.message;
    runs[i] = submitted_text(queue, setup.work_dir);
  }
  ASSERT_EQ(runs[0], runs[1]) << "two runs of one search sent different jobs";
  const std::string golden = std::string(KS_SOURCE_DIR) + "/tests/unit/golden/search_jobs.txt";
  if (const char *update = std::getenv("KS_UPDATE_GOLDEN"); update && std::string(update) == "1") {
    std::filesystem::create_directories(std::filesystem::path(golden).parent_path());
    write_text_file(golden, runs[0]);
    GTEST_SKIP() << "recorded " << golden;
  }
  std::ifstream in(golden);
  ASSERT_TRUE(in) << "no " << golden << ": record it with KS_UPDATE_GOLDEN=1";
  const std::string recorded(std::istreambuf_iterator<char>(in), {});
  if (recorded != runs[0]) {
    size_t at = 0;
    while (at < recorded.size() && at < runs[0].size() && recorded[at] == runs[0][at]) ++at;
    const size_t line_start = recorded.rfind("\n", at) == std::string::npos ? 0 : recorded.rfind("\n", at) + 1;
    FAIL() << "the jobs differ from " << golden << " from byte " << at
           << ":\nrecorded: " << recorded.substr(line_start, 300) << "\nnow:      " << runs[0].substr(line_start, 300);
  }
}

// At the end the best few are timed again beside the naive kernel, and their figures
// are against the naive kernel's time there (12 ms on the simulated queue), not its
// time when evaluated (10 ms): on PoCL the two differ by up to 2x between processes.
TEST(Search, TheFinalFiguresAreAgainstTheNaiveKernelTimedBesideThem) {
  const test::RunFolder folder("final_retime");
  const std::string &dir = folder.dir;
  RunDatabase db(dir + "/run.db");
  test::SimulatedQueue queue;
  SearchOutcome out = run_simulated(db, queue, simulated_setup(dir, 24));
  ASSERT_EQ(out.status, "finished") << out.message;
  std::vector<CandidateRow> candidates = db.candidates(out.run);
  std::vector<const CandidateRow *> top;
  for (const CandidateRow &c : candidates)
    if (c.status == CandidateStatus::Correct && c.proposer != "naive") top.push_back(&c);
  std::sort(top.begin(), top.end(), [](const CandidateRow *a, const CandidateRow *b) {
    return (a->retimed_speedup > 0 ? a->retimed_speedup : a->speedup) >
           (b->retimed_speedup > 0 ? b->retimed_speedup : b->speedup);
  });
  ASSERT_GE(top.size(), 3u);
  // The simulated queue times a candidate of speedup s side by side at 10/(s(1-0.01s)) ms.
  int against_the_retimed_naive = 0;
  for (const CandidateRow *c : top) {
    const double s = c->speedup;
    if (std::abs(c->retimed_speedup - test::SimulatedQueue::kNaiveRetimedMs / 10 * s * (1 - 0.01 * s)) < 1e-9)
      ++against_the_retimed_naive;
  }
  EXPECT_EQ(against_the_retimed_naive, 3);
  const double best = top[0]->retimed_speedup;
  EXPECT_NEAR(best, 1.2 * top[0]->speedup * (1 - 0.01 * top[0]->speedup), 1e-9) << "the best is one of the three";
}

// The progress notes of a run, kept.
class NotesKept : public ProgressSink {
 public:
  void update(const Progress &) override {}
  void note(const std::string &line) override { notes.push_back(line); }
  std::vector<std::string> notes;
};

// TF32 is the user's word, and it goes everywhere the run does: every job's command
// line, the run's summary, its report and its best's header. On a device without
// matrix units the run says once that it goes on in fp32.
TEST(Search, Tf32GoesToEveryJobAndIsSaidOnceWithoutMatrixUnits) {
  const test::RunFolder folder("tf32");
  const std::string &dir = folder.dir;
  RunDatabase db(dir + "/run.db");
  test::SimulatedQueue queue;
  SearchSetup setup = simulated_setup(dir, 8);
  setup.config.precision = "tf32";
  ASSERT_FALSE(setup.device.matrix_units);
  NotesKept progress;
  std::atomic<bool> stop{false};
  SearchOutcome out = run_search(db, std::nullopt, setup, queue, progress, stop);
  ASSERT_EQ(out.status, "finished") << out.message;
  int said = 0;
  for (const std::string &n : progress.notes) said += n.find("has no matrix units") != std::string::npos;
  EXPECT_EQ(said, 1);
  EXPECT_NE(progress.notes.front().find("(opencl, tf32)"), std::string::npos) << progress.notes.front();
  ASSERT_FALSE(queue.submitted().empty());
  for (const Job &job : queue.submitted()) {
    auto flag = std::find(job.args.begin(), job.args.end(), "--precision");
    ASSERT_TRUE(flag != job.args.end() && flag + 1 != job.args.end() && flag[1] == "tf32") << job.args[0];
  }
  EXPECT_EQ(run_summary(db, *db.run(out.run))["precision"], "tf32");
  EXPECT_EQ(report_data(db, out.run)["run"]["precision"], "tf32");
  write_artifacts(db, out.run, dir + "/out");
  std::ifstream best(dir + "/out/best.sched");
  std::string header;
  std::getline(best, header);
  EXPECT_NE(header.find("(opencl, tf32)"), std::string::npos) << header;
}

// When none of the best beats the naive kernel timed beside them (a CPU device's
// noise can undo a search's small gains), the naive kernel is the run's best, at 1x,
// not the fastest of the slower ones (the CI's evolve_llm once reported 0.88x).
TEST(Search, TheNaiveKernelIsTheBestWhenNoneBeatsItTimedBesideThem) {
  const test::RunFolder folder("naive_best");
  const std::string &dir = folder.dir;
  RunDatabase db(dir + "/run.db");
  test::SimulatedQueue queue;
  queue.retime_naive_at(1.0);  // every candidate (4x at most, 2.6 ms) is slower
  SearchSetup setup = simulated_setup(dir, 24);
  // Only the final timing, beside the naive kernel: a contender timed again beside the
  // best during the run is measured against the naive kernel's first time (10 ms).
  setup.config.retime_within = 0;
  SearchOutcome out = run_simulated(db, queue, setup);
  ASSERT_EQ(out.status, "finished") << out.message;
  std::string naive;
  int slower = 0;
  for (const CandidateRow &c : db.candidates(out.run)) {
    if (c.proposer == "naive") {
      naive = c.id;
      EXPECT_EQ(c.retimed_speedup, 1) << "the naive kernel, timed beside them, is their baseline";
    } else if (c.retimed_speedup > 0) {
      EXPECT_LT(c.retimed_speedup, 1) << c.id;
      ++slower;
    }
  }
  EXPECT_GE(slower, 2);
  const nlohmann::json data = report_data(db, out.run);
  ASSERT_TRUE(data["best"].is_object());
  EXPECT_EQ(data["best"]["id"], naive);
  EXPECT_EQ(data["best"]["retimed_speedup"], 1.0);
}

// A timing again that answers with times of the wrong shape is noted, the first
// figures stand, and the run finishes (no exception out of the JSON).
TEST(Search, AGarbledTimingAgainLeavesTheFirstFigures) {
  const test::RunFolder folder("garbled_retime");
  const std::string &dir = folder.dir;
  RunDatabase db(dir + "/run.db");
  test::SimulatedQueue queue;
  queue.garble_retimes();
  SearchOutcome out = run_simulated(db, queue, simulated_setup(dir, 24));
  ASSERT_EQ(out.status, "finished") << out.message;
  int retimes = 0;
  for (const Job &job : queue.submitted()) retimes += job.args[0] == "time";
  EXPECT_GE(retimes, 1);
  for (const CandidateRow &c : db.candidates(out.run)) EXPECT_EQ(c.retimed_speedup, 0) << c.id;
}

// A run with a time limit stops there and says so in the user's own figure.
TEST(Search, StopsAtItsTimeBudget) {
  const test::RunFolder folder("minutes");
  const std::string &dir = folder.dir;
  RunDatabase db(dir + "/run.db");
  test::SimulatedQueue queue(30);
  SearchSetup setup = simulated_setup(dir, 1000);
  setup.config.minutes = 0.005;  // 0.3 s: about ten evaluations of 30 ms
  SearchOutcome out = run_simulated(db, queue, setup);
  ASSERT_EQ(out.status, "finished") << out.message;
  EXPECT_EQ(out.message, "the time budget of 0.005 minutes is spent");
  EXPECT_LT(queue.done(), 100);
}

// Past its time budget and a tenth more, a run stops the evaluations still running (a
// compile that hangs) and leaves them not evaluated, instead of waiting for their own
// time limit and recording a timeout; the best are still timed again.
TEST(Search, StopsWhatStillRunsPastItsTimeBudget) {
  const test::RunFolder folder("overtime");
  const std::string &dir = folder.dir;
  RunDatabase db(dir + "/run.db");
  test::SimulatedQueue queue;
  queue.hang_evaluations_after(6);
  SearchSetup setup = simulated_setup(dir, 1000);
  setup.config.minutes = 0.03;     // 1.8 s (six evaluations take a tenth of it), and 0.18 s more
  setup.config.time_limit_s = 30;  // what the run would wait without the stop
  const auto start = std::chrono::steady_clock::now();
  SearchOutcome out = run_simulated(db, queue, setup);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(out.status, "finished") << out.message;
  EXPECT_EQ(out.message, "the time budget of 0.03 minutes is spent");
  EXPECT_LT(seconds, 10);
  EXPECT_EQ(queue.stops(), 1);
  std::map<std::string, int> by_status;
  for (const CandidateRow &c : db.candidates(out.run)) ++by_status[status_name(c.status)];
  EXPECT_EQ(by_status["pending"], 1);
  EXPECT_EQ(by_status["timeout"], 0);
  EXPECT_GE(by_status["correct"], 3);
  bool retimed = false;
  for (const CandidateRow &c : db.candidates(out.run)) retimed = retimed || c.retimed_speedup > 0;
  EXPECT_TRUE(retimed) << "the final timing again runs after the stop";
}

// Each island draws from its own mix: island 0 from random search alone, the others
// from the run's mix (the mutator).
TEST(Search, EachIslandHasItsOwnProposers) {
  const test::RunFolder folder("islands");
  const std::string &dir = folder.dir;
  std::atomic<bool> stop{false};
  test::NullProgress progress;
  RunDatabase db(dir + "/run.db");
  test::SimulatedQueue queue;
  SearchSetup setup = simulated_setup(dir, 18);
  setup.config.island_proposers = {{{"random", 1.0}}};
  SearchOutcome out = run_search(db, std::nullopt, setup, queue, progress, stop);
  EXPECT_EQ(out.status, "finished") << out.message;
  std::map<int, std::set<std::string>> by_island;
  for (const CandidateRow &c : db.candidates(out.run))
    if (c.proposer != "naive") by_island[c.island].insert(c.proposer);
  EXPECT_EQ(by_island[0], (std::set<std::string>{"random"}));
  EXPECT_EQ(by_island[1], (std::set<std::string>{"mutator"}));
  EXPECT_EQ(by_island[2], (std::set<std::string>{"mutator"}));
}

// kill -9 at twenty random moments (each a fresh process running the search, killed
// after a random delay, then resumed by the next), then run to the end: nothing
// recorded lost, nothing evaluated twice, the database whole, and the same
// candidates, outcomes and archive as an uninterrupted run with one worker.
TEST(Search, ResumesAfterKillNineAsIfNeverKilled) {
  const test::RunFolder folder("resume");
  const std::string &dir = folder.dir;
  const int budget = 60;  // at 30 ms an evaluation, longer than twenty kills take
  std::string uninterrupted;
  {
    RunDatabase db(dir + "/whole.db");
    test::SimulatedQueue queue;
    std::atomic<bool> stop{false};
    test::NullProgress progress;
    SearchOutcome out = run_search(db, std::nullopt, simulated_setup(dir + "/whole", budget), queue, progress, stop);
    ASSERT_EQ(out.status, "finished");
    uninterrupted = fingerprint(db, out.run);
  }
  const std::string path = dir + "/killed.db";
  Rng rng(2026);
  int kills = 0;
  while (true) {
    const bool resume = std::filesystem::exists(path);
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      // The search in a process of its own; exits 0 once it has finished.
      try {
        RunDatabase db(path);
        test::SimulatedQueue queue(30);
        std::atomic<bool> stop{false};
        test::NullProgress progress;
        std::optional<int64_t> run;
        if (resume)
          for (const RunRow &r : db.runs()) run = r.id;
        SearchOutcome out = run_search(db, run, simulated_setup(dir + "/killed", budget), queue, progress, stop);
        _exit(out.status == "finished" ? 0 : 3);
      } catch (const std::exception &e) {
        fprintf(stderr, "child: %s\n", e.what());
        _exit(4);
      }
    }
    if (kills < 20) {
      usleep(static_cast<useconds_t>(std::uniform_int_distribution<int>(5, 60)(rng) * 1000));
      kill(child, SIGKILL);
    }
    int status = 0;
    waitpid(child, &status, 0);
    if (WIFSIGNALED(status)) {
      ++kills;
      RunDatabase db(path);
      ASSERT_EQ(db.integrity_check(), "ok") << "after kill " << kills;
      continue;
    }
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_EQ(WEXITSTATUS(status), 0) << "the search failed in its process";
    break;  // finished (with every kill made: the last process ran to the end)
  }
  EXPECT_EQ(kills, 20);
  RunDatabase db(path);
  ASSERT_EQ(db.runs().size(), 1u);
  EXPECT_EQ(db.runs()[0].status, "finished");
  EXPECT_EQ(db.integrity_check(), "ok");
  EXPECT_EQ(fingerprint(db, db.runs()[0].id), uninterrupted);
}

// A full disk: the evaluation in hand is rolled back, the database stays whole, and
// a resume once there is room finishes the run as if nothing had happened.
TEST(Search, AFullDiskLosesNothing) {
  const test::RunFolder folder("full");
  const std::string &dir = folder.dir;
  std::atomic<bool> stop{false};
  test::NullProgress progress;
  std::string whole;
  {
    RunDatabase db(dir + "/whole.db");
    test::SimulatedQueue queue;
    whole = fingerprint(db, run_search(db, std::nullopt, simulated_setup(dir + "/w", 25), queue, progress, stop).run);
  }
  const std::string path = dir + "/full.db";
  int64_t evaluated_before = 0;
  {
    RunDatabase db(path);
    sqlite3 *raw = nullptr;
    sqlite3_open(path.c_str(), &raw);
    sqlite3_stmt *count = nullptr;
    sqlite3_prepare_v2(raw, "PRAGMA page_count", -1, &count, nullptr);
    sqlite3_step(count);
    const int64_t schema_pages = sqlite3_column_int64(count, 0);
    sqlite3_finalize(count);
    sqlite3_close(raw);
    db.limit_pages(schema_pages + 4);  // the schema and a few evaluations fit, not 25
    test::SimulatedQueue queue;
    EXPECT_THROW(run_search(db, std::nullopt, simulated_setup(dir + "/f", 25), queue, progress, stop), DatabaseError);
    EXPECT_EQ(db.integrity_check(), "ok");
    for (const CandidateRow &c : db.candidates(db.runs()[0].id)) evaluated_before += c.eval_seq > 0;
  }
  EXPECT_GT(evaluated_before, 0);
  EXPECT_LT(evaluated_before, 25);
  RunDatabase db(path);  // room again
  test::SimulatedQueue queue;
  SearchOutcome out = run_search(db, db.runs()[0].id, simulated_setup(dir + "/f", 25), queue, progress, stop);
  EXPECT_EQ(out.status, "finished");
  EXPECT_EQ(fingerprint(db, out.run), whole);
}

// The device vanishes mid-run: five evaluations in a row without a record end the
// run as failed, with the last child's words; a resume once the device is back
// finishes it, the failed evaluations kept as failures.
TEST(Search, ADeviceThatVanishesFailsTheRunResumably) {
  const test::RunFolder folder("vanish");
  const std::string &dir = folder.dir;
  std::atomic<bool> stop{false};
  test::NullProgress progress;
  RunDatabase db(dir + "/run.db");
  test::SimulatedQueue broken;
  broken.break_device_after(6);
  SearchOutcome out = run_search(db, std::nullopt, simulated_setup(dir, 20), broken, progress, stop);
  EXPECT_EQ(out.status, "failed");
  EXPECT_EQ(out.message,
            "5 evaluations in a row gave no record (the device or the children failing); the last said: error: no "
            "OpenCL device found");
  EXPECT_EQ(db.runs()[0].status, "failed");
  test::SimulatedQueue healthy;
  out = run_search(db, out.run, simulated_setup(dir, 20), healthy, progress, stop);
  EXPECT_EQ(out.status, "finished") << out.message;
  int failed = 0;
  for (const CandidateRow &c : db.candidates(out.run)) failed += c.status == CandidateStatus::Failed;
  EXPECT_EQ(failed, 5);
}

// A worker that hangs is killed with its process group at its job's time limit, one
// that crashes fails its job with its words; either way the slot's next job gets a
// fresh worker, and the other slot serves on. The worker is a shell script speaking
// `ksmith worker`'s protocol.
TEST(WorkerQueue, AWorkerThatHangsOrCrashesFailsItsJobOnly) {
  const std::string script = temp_path("worker") + ".sh";
  write_text_file(
      script,
      "#!/bin/sh\n"
      "while read line; do\n"
      "  case \"$line\" in\n"
      "    *'\"hang\"'*) sleep 30 & sleep 30;;\n"
      "    *'\"crash\"'*) echo dying >&2; exit 3;;\n"
      "    *) t=$(echo \"$line\" | sed 's/.*\"ticket\":\\([0-9]*\\).*/\\1/')\n"
      "       echo \"{\\\"ticket\\\":$t,\\\"exit\\\":0,\\\"out\\\":\\\"done $$\\\",\\\"err\\\":\\\"\\\"}\";;\n"
      "  esac\n"
      "done\n");
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  WorkerQueue queue(script, {{"first", {}}, {"second", {}}});
  auto finish = [&](size_t count) {
    std::map<uint64_t, JobResult> results;
    auto start = std::chrono::steady_clock::now();
    while (results.size() < count && std::chrono::steady_clock::now() - start < std::chrono::seconds(20))
      for (JobResult &r : queue.wait(0.5)) results[r.ticket] = r;
    return results;
  };
  auto start = std::chrono::steady_clock::now();
  queue.submit({1, {"hang"}, 1.0});
  queue.submit({2, {"run"}, 10.0});
  std::map<uint64_t, JobResult> results = finish(2);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_TRUE(results[1].child.timed_out);
  EXPECT_EQ(results[1].child.signal, SIGKILL);
  EXPECT_EQ(results[1].device, "first");
  EXPECT_FALSE(results[2].child.timed_out);
  EXPECT_EQ(results[2].child.exit_status, 0);
  EXPECT_EQ(results[2].device, "second");
  const std::string second = results[2].child.out;
  EXPECT_EQ(second.rfind("done ", 0), 0u) << second;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10)) << "the group's sleeps were killed too";
  queue.submit({3, {"crash"}, 10.0});
  queue.submit({4, {"run"}, 10.0});
  results = finish(2);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[3].child.exit_status, 3);
  EXPECT_NE(results[3].child.err.find("dying"), std::string::npos) << results[3].child.err;
  EXPECT_EQ(results[4].child.out, second) << "the second slot's worker served on";
  queue.submit({5, {"run"}, 10.0});
  results = finish(1);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[5].child.exit_status, 0) << "a fresh worker in the slot whose worker crashed";
  EXPECT_NE(results[5].child.out, second);
}

// A worker whose device failed answers its job with "retire" (ksmith worker ends
// then): the queue takes the answer and gives the slot's next job a fresh worker, even
// where the old one would serve on (this script does).
TEST(WorkerQueue, AWorkerWhoseDeviceFailedIsReplaced) {
  const std::string script = temp_path("retiring_worker") + ".sh";
  write_text_file(
      script,
      "#!/bin/sh\n"
      "while read line; do\n"
      "  t=$(echo \"$line\" | sed 's/.*\"ticket\":\\([0-9]*\\).*/\\1/')\n"
      "  case \"$line\" in\n"
      "    *'\"fail\"'*) echo \"{\\\"ticket\\\":$t,\\\"exit\\\":1,\\\"out\\\":\\\"failed "
      "$$\\\",\\\"err\\\":\\\"\\\",\\\"retire\\\":\\\"the device failed\\\"}\";;\n"
      "    *) echo \"{\\\"ticket\\\":$t,\\\"exit\\\":0,\\\"out\\\":\\\"done $$\\\",\\\"err\\\":\\\"\\\"}\";;\n"
      "  esac\n"
      "done\n");
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  WorkerQueue queue(script, {{"only", {}}});
  auto one = [&](uint64_t ticket, const char *what) {
    queue.submit({ticket, {what}, 10.0});
    auto start = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - start < std::chrono::seconds(10))
      for (JobResult &r : queue.wait(0.5))
        if (r.ticket == ticket) return r;
    ADD_FAILURE() << "no answer to job " << ticket;
    return JobResult{};
  };
  const std::string first = one(1, "run").child.out;
  JobResult failed = one(2, "fail");
  EXPECT_EQ(failed.child.exit_status, 1);
  EXPECT_EQ(failed.child.out, "failed " + first.substr(5)) << "the failing job ran on the first worker";
  const std::string after = one(3, "run").child.out;
  EXPECT_EQ(after.rfind("done ", 0), 0u) << after;
  EXPECT_NE(after, first) << "the job after the failure went to a fresh worker";
}

// A device that disappears: every job on it gives no output (its worker cannot open
// it). After WorkerQueue::kRetireAfter of them in a row it is left out, said in the
// note of the result that retires it, and the other device serves every job after.
TEST(WorkerQueue, ADeviceThatDisappearsIsLeftOutWhileAnotherServes) {
  const std::string script = temp_path("gone") + ".sh";
  write_text_file(script,
                  "#!/bin/sh\n"
                  "while read line; do\n"
                  "  t=$(echo \"$line\" | sed 's/.*\"ticket\":\\([0-9]*\\).*/\\1/')\n"
                  "  case \"$line\" in\n"
                  "    *'\"gone\"'*) echo \"{\\\"ticket\\\":$t,\\\"exit\\\":1,\\\"out\\\":\\\"\\\","
                  "\\\"err\\\":\\\"error: no OpenCL device found\\\"}\";;\n"
                  "    *) echo \"{\\\"ticket\\\":$t,\\\"exit\\\":0,\\\"out\\\":\\\"record\\\","
                  "\\\"err\\\":\\\"\\\"}\";;\n"
                  "  esac\n"
                  "done\n");
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  WorkerQueue queue(script, {{"here", {"here"}}, {"gone", {"gone"}}});
  EXPECT_EQ(queue.slots(), 2u);
  std::vector<JobResult> results;
  std::string note;
  // Jobs until it is left out (which device a job meets is the race of their answers:
  // on a loaded machine `here` may take many in a row), then six more.
  uint64_t ticket = 0, last = 200;
  while (ticket < last) {
    while (queue.running() >= queue.slots())
      for (JobResult &r : queue.wait(0.5)) {
        if (!r.note.empty() && note.empty()) {
          note = r.note;
          last = std::min(last, ticket + 6);
        }
        results.push_back(r);
      }
    queue.submit({++ticket, {"run"}, 10.0});
  }
  while (queue.running() > 0)
    for (JobResult &r : queue.wait(0.5)) results.push_back(r);
  ASSERT_EQ(results.size(), ticket);
  ASSERT_LT(ticket, 200u) << "the device that is gone was never left out";
  EXPECT_EQ(queue.slots(), 1u) << "the device that is gone is left out";
  EXPECT_NE(note.find("gone gave no record for 3 evaluations in a row (error: no OpenCL device found)"),
            std::string::npos)
      << note;
  EXPECT_NE(note.find("the run goes on with here"), std::string::npos) << note;
  int on_gone = 0;
  for (const JobResult &r : results) on_gone += r.device == "gone";
  EXPECT_EQ(on_gone, WorkerQueue::kRetireAfter) << "no job went to it after";
}

// A run given a start schedule evaluates it right after the naive kernel, as a
// parent on every island; a start that does not fit the spec is refused before the
// run begins, naming the file.
TEST(Search, GoesOnFromAStartSchedule) {
  const std::string dir = temp_path("start");
  std::atomic<bool> stop{false};
  test::NullProgress progress;
  const std::string hand = std::string(KS_SOURCE_DIR) + "/examples/softmax.sched";
  SearchSetup setup = simulated_setup(dir, 12);
  setup.starts.push_back({hand, read_source_file(hand, "schedule")->text});
  RunDatabase db(dir + ".db");
  test::SimulatedQueue queue;
  SearchOutcome out = run_search(db, std::nullopt, setup, queue, progress, stop);
  ASSERT_EQ(out.status, "finished") << out.message;
  std::optional<CandidateRow> start;
  for (const CandidateRow &c : db.candidates(out.run))
    if (c.proposer == "start") {
      EXPECT_FALSE(start) << "one start, evaluated once";
      start = c;
    }
  ASSERT_TRUE(start);
  EXPECT_EQ(start->eval_seq, 2) << "right after the naive kernel";
  EXPECT_EQ(start->note.rfind(hand + " (", 0), 0u) << start->note;  // the file and its first comment
  EXPECT_EQ(start->schedule, print_schedule(load_schedule(hand)));
  if (start->status == CandidateStatus::Correct) {
    for (int island = 0; island < 3; ++island) {
      std::vector<std::pair<Elite, Cell>> members;
      std::map<Cell, Elite> grid;
      db.load_island(out.run, island, &members, &grid);
      bool held = false;
      for (const auto &[e, cell] : members) held = held || e.id == start->id;
      EXPECT_TRUE(held) << "island " << island;
    }
  }

  SearchSetup wrong = simulated_setup(dir, 12);
  const std::string other = std::string(KS_SOURCE_DIR) + "/examples/matmul.sched";
  wrong.starts.push_back({other, read_source_file(other, "schedule")->text});
  RunDatabase db2(dir + "2.db");
  EXPECT_EQ(test::user_error([&] { run_search(db2, std::nullopt, wrong, queue, progress, stop); }),
            "error: the start schedule '" + other +
                "' does not fit softmax at N=64, D=512 on simulated: tile c: no stage named c; stages are row_max, "
                "e, total, y");
  EXPECT_TRUE(db2.runs().empty()) << "refused before the run began";
  std::filesystem::remove(dir + ".db");
  std::filesystem::remove(dir + "2.db");
  std::filesystem::remove_all(dir);
}

// Past the naive kernel, every evaluation is told to give up at give_up times the
// best time so far (10 ms at least); a candidate that gives up is "slow", keeps its
// one run's speedup for the cost model, and is no parent. give_up = 0 times all.
TEST(Search, GivesUpOnCandidatesFarSlowerThanTheBest) {
  const std::string dir = temp_path("give_up");
  std::atomic<bool> stop{false};
  test::NullProgress progress;
  // 80 evaluations: a candidate is slow only where its hash's speedup (0.25x to 4x)
  // is under an eighth of the best, a few in a hundred, and 30 drew none with another
  // random stream.
  SearchSetup setup = simulated_setup(dir, 80);
  setup.config.give_up = 8;
  RunDatabase db(dir + ".db");
  test::SimulatedQueue queue;
  queue.give_up_when_asked();
  SearchOutcome out = run_search(db, std::nullopt, setup, queue, progress, stop);
  ASSERT_EQ(out.status, "finished") << out.message;
  int evaluations = 0, limited = 0;
  for (const Job &job : queue.submitted()) {
    if (job.args[0] != "run") continue;
    auto at = std::find(job.args.begin(), job.args.end(), "--give-up-ms");
    if (evaluations++ == 0) {
      EXPECT_EQ(at, job.args.end()) << "the naive kernel is timed in full";
      continue;
    }
    ASSERT_NE(at, job.args.end());
    const double ms = std::stod(*(at + 1));
    EXPECT_GE(ms, 10.0);
    EXPECT_LE(ms, 8 * 10.0 + 1e-9) << "8 times the naive kernel's 10 ms at most";
    limited += ms < 80.0 - 1e-9;
  }
  EXPECT_GT(limited, 0) << "the limit follows the best";
  std::set<std::string> parents;
  for (int island = 0; island < 3; ++island) {
    std::vector<std::pair<Elite, Cell>> members;
    std::map<Cell, Elite> grid;
    db.load_island(out.run, island, &members, &grid);
    for (const auto &[e, cell] : members) parents.insert(e.id);
  }
  int slow = 0;
  for (const CandidateRow &c : db.candidates(out.run)) {
    if (c.status != CandidateStatus::Slow) continue;
    ++slow;
    EXPECT_GT(c.speedup, 0) << "its one run";
    EXPECT_LT(c.speedup, 1) << "slower than the naive kernel at least";
    EXPECT_EQ(parents.count(c.id), 0u) << c.id;
    EXPECT_EQ(c.verdict.rfind("slow: ", 0), 0u) << c.verdict;
  }
  EXPECT_GT(slow, 0);

  setup.config.give_up = 0;
  RunDatabase db2(dir + "2.db");
  test::SimulatedQueue all;
  all.give_up_when_asked();
  run_search(db2, std::nullopt, setup, all, progress, stop);
  for (const Job &job : all.submitted())
    EXPECT_EQ(std::find(job.args.begin(), job.args.end(), "--give-up-ms"), job.args.end());
  std::filesystem::remove(dir + ".db");
  std::filesystem::remove(dir + "2.db");
  std::filesystem::remove_all(dir);
}

TEST(Search, RefusesADatabaseOfAnotherSpec) {
  const std::string dir = temp_path("other_spec");
  std::atomic<bool> stop{false};
  test::NullProgress progress;
  RunDatabase db(dir + ".db");
  test::SimulatedQueue queue;
  run_search(db, std::nullopt, simulated_setup(dir, 3), queue, progress, stop);
  SearchSetup other = simulated_setup(dir, 3);
  other.spec_path = std::string(KS_SOURCE_DIR) + "/examples/gelu.ks";
  other.config.sizes = "";
  EXPECT_EQ(test::user_error([&] { run_search(db, std::nullopt, other, queue, progress, stop); }),
            "error: the run database '" + dir + ".db' holds runs of kernel 'softmax' (" + KS_SOURCE_DIR +
                "/examples/softmax.ks), not 'gelu'; give another --db");
  std::filesystem::remove_all(dir);
  std::filesystem::remove(dir + ".db");
}

}  // namespace
}  // namespace ks

namespace ks {
namespace {

// A short search on the first OpenCL device (PoCL here), through child processes of
// ksmith as `ksmith evolve` runs them: it beats the naive kernel of matmul and of
// softmax, by the figures timed again at the end.
class SearchOnDevice : public testing::TestWithParam<std::pair<const char *, const char *>> {};

TEST_P(SearchOnDevice, BeatsTheNaiveKernel) {
  if (!test::has_device("opencl")) GTEST_SKIP() << test::missing_device("opencl");
  auto [name, sizes] = GetParam();
  const test::RunFolder folder(std::string("device_") + name);
  // The best is timed again at the end beside the naive kernel. With 24 evaluations
  // and batches of 2 ms, 18 searches of softmax on this 2-core machine ended between
  // 1.26x and 2.24x; with batches of 10 ms, 1.30x to 2.20x; with 32 evaluations too,
  // ten ended between 1.54x and 2.36x. On a later 2-core machine (PoCL's
  // pthread-skylake-avx512), five softmax searches ended between 1.10x and 1.96x: the
  // bar is beating the naive kernel by more than its timing noise, not by a fifth.
  test::DeviceSearch run = test::device_search(name, sizes, 32, 10, folder.dir);
  ASSERT_EQ(run.outcome.status, "finished") << run.outcome.message;
  EXPECT_GT(run.best, 1.05) << name << ": the best schedule found:\n" << run.schedule;
  std::printf("%s at %s: best %.2fx over the naive kernel in 32 evaluations\n%s", name, sizes, run.best,
              run.schedule.c_str());
}

// A kernel the driver never finishes (a kernel body spinning on a volatile read: on
// every driver; the schedules PoCL once compiled into endless loops are refused there
// now, runtime/device.h): the evaluation a search runs is killed at its time limit
// and says so.
TEST(DriverHang, IsATimeoutNotAHungSearch) {
  if (!test::has_device("opencl")) GTEST_SKIP() << test::missing_device("opencl");
  const std::string body = temp_path("spin.cl");
  std::ofstream(body) << "__kernel void y(__global const float *restrict x, __global float *restrict y) {\n"
                         "  volatile __global const float *p = x;\n"
                         "  while (p[0] == p[0]) {\n  }\n"
                         "  y[get_global_id(0)] = x[get_global_id(0)];\n}\n";
  const std::string spec = std::string(KS_SOURCE_DIR) + "/examples/gelu.ks";
  const auto start = std::chrono::steady_clock::now();
  IsolatedRun run = run_isolated(KS_KSMITH, {spec, "--kernel", body, "--no-time", "--trials", "1"}, 5.0);
  std::filesystem::remove(body);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(15));
  EXPECT_FALSE(run.ok);
  EXPECT_NE(run.failure.find("no record within the time limit of 5 s"), std::string::npos) << run.failure;
}

INSTANTIATE_TEST_SUITE_P(Examples, SearchOnDevice,
                         testing::Values(std::pair{"matmul", "N=128"}, std::pair{"softmax", "N=64,D=2048"}),
                         [](const auto &info) { return std::string(info.param.first); });

}  // namespace
}  // namespace ks
