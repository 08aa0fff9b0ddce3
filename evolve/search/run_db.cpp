// The run database on SQLite's C API: the schema, its version, and typed rows.
#include "evolve/search/run_db.h"

#include <sqlite3.h>

#include <cmath>
#include <filesystem>

#include "ir/diagnostic.h"

namespace ks {

namespace {
const std::pair<CandidateStatus, const char *> kStatusNames[] = {
    {CandidateStatus::Pending, "pending"},     {CandidateStatus::Refused, "refused"},
    {CandidateStatus::Correct, "correct"},     {CandidateStatus::Slow, "slow"},
    {CandidateStatus::Incorrect, "incorrect"}, {CandidateStatus::Flagged, "flagged"},
    {CandidateStatus::Failed, "failed"},       {CandidateStatus::Timeout, "timeout"}};
}  // namespace

const char *status_name(CandidateStatus status) {
  for (const auto &[s, name] : kStatusNames)
    if (s == status) return name;
  throw InternalError("a candidate status without a name");
}

std::optional<CandidateStatus> parse_status(const std::string &name) {
  for (const auto &[s, known] : kStatusNames)
    if (name == known) return s;
  return std::nullopt;
}

namespace {

// The schema, version 2 (version 1 lacked candidates.body). Candidates are keyed by run and identity; members and
// cells hold the archive (evolve/search/archive.h) as it stands.
const char *kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  spec_path TEXT NOT NULL, kernel TEXT NOT NULL, spec_text TEXT NOT NULL,
  device TEXT NOT NULL, target TEXT NOT NULL, sizes TEXT NOT NULL, config TEXT NOT NULL,
  status TEXT NOT NULL, message TEXT NOT NULL DEFAULT '',
  started REAL NOT NULL, updated REAL NOT NULL, seconds REAL NOT NULL DEFAULT 0,
  baseline_ms REAL NOT NULL DEFAULT 0, baseline_cv REAL NOT NULL DEFAULT 0,
  rng TEXT NOT NULL DEFAULT '', state TEXT NOT NULL DEFAULT '{}');
CREATE TABLE IF NOT EXISTS candidates (
  run INTEGER NOT NULL REFERENCES runs(id), id TEXT NOT NULL,
  seq INTEGER NOT NULL, eval_seq INTEGER NOT NULL DEFAULT 0,
  schedule TEXT NOT NULL, proposer TEXT NOT NULL, note TEXT NOT NULL DEFAULT '',
  parent TEXT NOT NULL DEFAULT '', inspirations TEXT NOT NULL DEFAULT '[]',
  island INTEGER NOT NULL, iteration INTEGER NOT NULL, seed INTEGER NOT NULL,
  status TEXT NOT NULL, verdict TEXT NOT NULL DEFAULT '',
  speedup REAL NOT NULL DEFAULT 0, median_ms REAL NOT NULL DEFAULT 0, cv REAL NOT NULL DEFAULT 0,
  retimed_speedup REAL NOT NULL DEFAULT 0, retimed_cv REAL NOT NULL DEFAULT 0,
  record TEXT NOT NULL DEFAULT '', seconds REAL NOT NULL DEFAULT 0,
  created REAL NOT NULL, finished REAL NOT NULL DEFAULT 0, predicted REAL,
  body TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (run, id));
CREATE INDEX IF NOT EXISTS candidates_by_seq ON candidates (run, seq);
CREATE TABLE IF NOT EXISTS members (
  run INTEGER NOT NULL, island INTEGER NOT NULL, candidate TEXT NOT NULL, position INTEGER NOT NULL,
  a INTEGER NOT NULL, b INTEGER NOT NULL, speedup REAL NOT NULL, migrant INTEGER NOT NULL,
  PRIMARY KEY (run, island, candidate));
CREATE TABLE IF NOT EXISTS model_calls (
  run INTEGER NOT NULL REFERENCES runs(id), proposal INTEGER NOT NULL,
  endpoint TEXT NOT NULL, model TEXT NOT NULL, seed INTEGER,
  prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL,
  latency_s REAL NOT NULL, attempts INTEGER NOT NULL, ok INTEGER NOT NULL, result TEXT NOT NULL,
  created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS cells (
  run INTEGER NOT NULL, island INTEGER NOT NULL, a INTEGER NOT NULL, b INTEGER NOT NULL,
  candidate TEXT NOT NULL, speedup REAL NOT NULL, migrant INTEGER NOT NULL,
  PRIMARY KEY (run, island, a, b));
)sql";

double now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

}  // namespace

// A prepared statement, finalised with it; errors name the SQL and SQLite's words.
class Statement {
 public:
  Statement(RunDatabase &db, const char *sql) : db_(db) {
    if (sqlite3_prepare_v2(db.db_, sql, -1, &stmt_, nullptr) != SQLITE_OK) fail("preparing");
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement &bind(int i, const std::string &v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Statement &bind(int i, int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  Statement &bind(int i, double v) {
    sqlite3_bind_double(stmt_, i, v);
    return *this;
  }
  // A row (true) or the end (false).
  bool step() {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail("running");
  }
  void run() {
    while (step()) {
    }
  }
  std::string text(int i) const {
    const unsigned char *t = sqlite3_column_text(stmt_, i);
    return t ? std::string(reinterpret_cast<const char *>(t), static_cast<size_t>(sqlite3_column_bytes(stmt_, i)))
             : std::string();
  }
  int64_t integer(int i) const { return sqlite3_column_int64(stmt_, i); }
  double real(int i) const { return sqlite3_column_double(stmt_, i); }
  double real_or_nan(int i) const {
    return sqlite3_column_type(stmt_, i) == SQLITE_NULL ? std::nan("") : sqlite3_column_double(stmt_, i);
  }

 private:
  RunDatabase &db_;
  sqlite3_stmt *stmt_ = nullptr;
  [[noreturn]] void fail(const char *what) {
    int code = sqlite3_errcode(db_.db_);
    std::string message = std::string(sqlite3_errmsg(db_.db_));
    if (code == SQLITE_FULL) throw DatabaseError("the disk holding " + db_.path_ + " is full (" + message + ")");
    throw DatabaseError(std::string(what) + " a statement of " + db_.path_ + " failed: " + message);
  }
};

RunDatabase::RunDatabase(const std::string &path) : path_(path) {
  const bool existed = std::filesystem::exists(path);
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK) {
    std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw UserError("error: cannot open the run database '" + path + "': " + why);
  }
  sqlite3_busy_timeout(db_, 10000);
  try {
    int version = 0;
    {
      Statement v(*this, "PRAGMA user_version");
      if (v.step()) version = static_cast<int>(v.integer(0));
    }
    if (existed && version == 0) {
      Statement tables(*this, "SELECT count(*) FROM sqlite_master");
      if (tables.step() && tables.integer(0) > 0)
        throw UserError("error: '" + path + "' is an SQLite database, but not a kernelsmith run database");
    }
    if (version > kRunDatabaseVersion)
      throw UserError("error: the run database '" + path + "' has format version " + std::to_string(version) +
                      "; this ksmith reads version " + std::to_string(kRunDatabaseVersion) +
                      " and older (a newer ksmith wrote it)");
    exec("PRAGMA journal_mode=WAL");
    exec("PRAGMA synchronous=NORMAL");
    exec("PRAGMA foreign_keys=ON");
    if (version == 0) {
      transaction([&] {
        exec(kSchema);
        exec("PRAGMA user_version = " + std::to_string(kRunDatabaseVersion));
      });
    } else if (version == 1) {  // a run of an older ksmith, resumed: its candidates have no bodies
      transaction([&] {
        exec("ALTER TABLE candidates ADD COLUMN body TEXT NOT NULL DEFAULT ''");
        exec(kSchema);  // tables added since (IF NOT EXISTS)
        exec("PRAGMA user_version = " + std::to_string(kRunDatabaseVersion));
      });
    }
  } catch (const DatabaseError &e) {
    sqlite3_close(db_);
    db_ = nullptr;
    std::string why = e.what();
    throw UserError("error: cannot use the run database '" + path + "': " +
                    (why.find("file is not a database") != std::string::npos ? "it is not an SQLite database" : why));
  } catch (...) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
}

RunDatabase::~RunDatabase() {
  if (db_) sqlite3_close(db_);
}

void RunDatabase::exec(const std::string &sql) {
  char *error = nullptr;
  int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error);
  if (rc != SQLITE_OK) {
    std::string message = error ? error : sqlite3_errmsg(db_);
    sqlite3_free(error);
    if (rc == SQLITE_FULL || sqlite3_errcode(db_) == SQLITE_FULL)
      throw DatabaseError("the disk holding " + path_ + " is full (" + message + ")");
    if (rc == SQLITE_NOTADB) throw DatabaseError("file is not a database");
    throw DatabaseError(message);
  }
}

void RunDatabase::exec_noexcept(const std::string &sql) { sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr); }

int64_t RunDatabase::add_run(const RunRow &r) {
  Statement s(*this,
              "INSERT INTO runs (spec_path, kernel, spec_text, device, target, sizes, config, status, message, "
              "started, updated, seconds, baseline_ms, baseline_cv, rng, state) "
              "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)");
  s.bind(1, r.spec_path).bind(2, r.kernel).bind(3, r.spec_text).bind(4, r.device).bind(5, r.target);
  s.bind(6, r.sizes).bind(7, r.config).bind(8, r.status).bind(9, r.message).bind(10, now()).bind(11, now());
  s.bind(12, r.seconds).bind(13, r.baseline_ms).bind(14, r.baseline_cv).bind(15, r.rng).bind(16, r.state);
  s.run();
  return sqlite3_last_insert_rowid(db_);
}

void RunDatabase::update_run(const RunRow &r) {
  Statement s(*this,
              "UPDATE runs SET status = ?2, message = ?3, updated = ?4, seconds = ?5, baseline_ms = ?6, "
              "baseline_cv = ?7, rng = ?8, state = ?9, config = ?10 WHERE id = ?1");
  s.bind(1, r.id).bind(2, r.status).bind(3, r.message).bind(4, now()).bind(5, r.seconds).bind(6, r.baseline_ms);
  s.bind(7, r.baseline_cv).bind(8, r.rng).bind(9, r.state).bind(10, r.config);
  s.run();
}

namespace {
const char *kRunColumns =
    "id, spec_path, kernel, spec_text, device, target, sizes, config, status, message, started, updated, seconds, "
    "baseline_ms, baseline_cv, rng, state";

RunRow run_from(const Statement &s) {
  RunRow r;
  r.id = s.integer(0);
  r.spec_path = s.text(1), r.kernel = s.text(2), r.spec_text = s.text(3), r.device = s.text(4);
  r.target = s.text(5), r.sizes = s.text(6), r.config = s.text(7), r.status = s.text(8), r.message = s.text(9);
  r.started = s.real(10), r.updated = s.real(11), r.seconds = s.real(12), r.baseline_ms = s.real(13);
  r.baseline_cv = s.real(14), r.rng = s.text(15), r.state = s.text(16);
  return r;
}

const char *kCandidateColumns =
    "run, id, seq, eval_seq, schedule, proposer, note, parent, inspirations, island, iteration, seed, status, "
    "verdict, speedup, median_ms, cv, retimed_speedup, retimed_cv, record, seconds, created, finished, predicted, body";

CandidateRow candidate_from(const Statement &s) {
  CandidateRow c;
  c.run = s.integer(0), c.id = s.text(1), c.seq = s.integer(2), c.eval_seq = s.integer(3);
  c.schedule = s.text(4), c.proposer = s.text(5), c.note = s.text(6), c.parent = s.text(7);
  c.inspirations = s.text(8), c.island = static_cast<int>(s.integer(9)), c.iteration = s.integer(10);
  c.seed = static_cast<uint64_t>(s.integer(11)), c.verdict = s.text(13);
  const std::optional<CandidateStatus> status = parse_status(s.text(12));
  if (!status)
    throw UserError("error: the run database holds candidate " + c.id + " of unknown status '" + s.text(12) + "'");
  c.status = *status;
  c.speedup = s.real(14), c.median_ms = s.real(15), c.cv = s.real(16), c.retimed_speedup = s.real(17);
  c.retimed_cv = s.real(18), c.record = s.text(19), c.seconds = s.real(20), c.created = s.real(21);
  c.finished = s.real(22), c.predicted = s.real_or_nan(23), c.body = s.text(24);
  return c;
}
}  // namespace

std::optional<RunRow> RunDatabase::run(int64_t id) {
  Statement s(*this, (std::string("SELECT ") + kRunColumns + " FROM runs WHERE id = ?1").c_str());
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  return run_from(s);
}

std::vector<RunRow> RunDatabase::runs() {
  Statement s(*this, (std::string("SELECT ") + kRunColumns + " FROM runs ORDER BY id").c_str());
  std::vector<RunRow> out;
  while (s.step()) out.push_back(run_from(s));
  return out;
}

void RunDatabase::put_candidate(const CandidateRow &c) {
  Statement s(*this, (std::string("INSERT OR REPLACE INTO candidates (") + kCandidateColumns +
                      ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, "
                      "?19, ?20, ?21, ?22, ?23, ?24, ?25)")
                         .c_str());
  s.bind(1, c.run).bind(2, c.id).bind(3, c.seq).bind(4, c.eval_seq).bind(5, c.schedule).bind(6, c.proposer);
  s.bind(7, c.note).bind(8, c.parent).bind(9, c.inspirations).bind(10, static_cast<int64_t>(c.island));
  s.bind(11, c.iteration)
      .bind(12, static_cast<int64_t>(c.seed))
      .bind(13, std::string(status_name(c.status)))
      .bind(14, c.verdict);
  s.bind(15, c.speedup).bind(16, c.median_ms).bind(17, c.cv).bind(18, c.retimed_speedup).bind(19, c.retimed_cv);
  s.bind(20, c.record).bind(21, c.seconds).bind(22, c.created > 0 ? c.created : now()).bind(23, c.finished);
  s.bind(24, c.predicted);  // NaN: NULL
  s.bind(25, c.body);
  s.run();
}

void RunDatabase::add_model_call(const ModelCallRow &c) {
  Statement s(*this,
              "INSERT INTO model_calls (run, proposal, endpoint, model, seed, prompt_tokens, completion_tokens, "
              "latency_s, attempts, ok, result, created) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)");
  const ModelCall &m = c.call;
  s.bind(1, c.run).bind(2, c.proposal).bind(3, m.endpoint).bind(4, m.model);
  if (m.seed) s.bind(5, *m.seed);  // else NULL
  s.bind(6, m.prompt_tokens).bind(7, m.completion_tokens).bind(8, m.latency_s);
  s.bind(9, static_cast<int64_t>(m.attempts)).bind(10, static_cast<int64_t>(m.ok)).bind(11, m.result).bind(12, now());
  s.run();
}

ModelCallTotals RunDatabase::model_call_totals(int64_t run) {
  // A call's result says what became of its proposal ("evaluated", "duplicate: ...",
  // "refused: ..."); an evaluated one's candidate (its proposal's seq) says how it did.
  Statement s(*this,
              "SELECT COUNT(*), COALESCE(SUM(m.ok), 0), COALESCE(SUM(m.prompt_tokens), 0), "
              "COALESCE(SUM(m.completion_tokens), 0), COALESCE(SUM(m.latency_s), 0), "
              "COALESCE(SUM(m.result = 'evaluated'), 0), "
              "COALESCE(SUM(m.result = 'evaluated' AND c.status = 'correct'), 0), "
              "COALESCE(SUM(m.result = 'evaluated' AND (c.verdict LIKE 'does not compile%' OR "
              "c.verdict LIKE 'the device''s compiler refuses%')), 0), "
              "COALESCE(SUM(m.result LIKE 'duplicate:%'), 0), COALESCE(SUM(m.result LIKE 'refused:%'), 0) "
              "FROM model_calls m LEFT JOIN candidates c ON c.run = m.run AND c.seq = m.proposal WHERE m.run = ?1");
  s.bind(1, run);
  ModelCallTotals t;
  if (s.step()) {
    t.calls = s.integer(0);
    t.proposed = s.integer(1);
    t.prompt_tokens = s.integer(2);
    t.completion_tokens = s.integer(3);
    t.latency_s = s.real(4);
    t.evaluated = s.integer(5);
    t.correct = s.integer(6);
    t.failed_to_compile = s.integer(7);
    t.duplicates = s.integer(8);
    t.refused = s.integer(9);
  }
  return t;
}

std::vector<CandidateRow> RunDatabase::candidates(int64_t run) {
  Statement s(*this,
              (std::string("SELECT ") + kCandidateColumns + " FROM candidates WHERE run = ?1 ORDER BY seq").c_str());
  s.bind(1, run);
  std::vector<CandidateRow> out;
  while (s.step()) out.push_back(candidate_from(s));
  return out;
}

std::optional<CandidateRow> RunDatabase::candidate(int64_t run, const std::string &id) {
  Statement s(*this,
              (std::string("SELECT ") + kCandidateColumns + " FROM candidates WHERE run = ?1 AND id = ?2").c_str());
  s.bind(1, run).bind(2, id);
  if (!s.step()) return std::nullopt;
  return candidate_from(s);
}

void RunDatabase::apply(int64_t run, const std::vector<ArchiveChange> &changes) {
  for (const ArchiveChange &c : changes) {
    if (c.kind == ArchiveChange::Member) {
      Statement s(*this,
                  "INSERT OR REPLACE INTO members (run, island, candidate, position, a, b, speedup, migrant) "
                  "VALUES (?1, ?2, ?3, (SELECT count(*) FROM members WHERE run = ?1 AND island = ?2), ?4, ?5, ?6, ?7)");
      s.bind(1, run)
          .bind(2, static_cast<int64_t>(c.island))
          .bind(3, c.elite.id)
          .bind(4, static_cast<int64_t>(c.cell.a));
      s.bind(5, static_cast<int64_t>(c.cell.b)).bind(6, c.elite.speedup).bind(7, static_cast<int64_t>(c.elite.migrant));
      s.run();
    } else {
      Statement s(*this,
                  "INSERT OR REPLACE INTO cells (run, island, a, b, candidate, speedup, migrant) "
                  "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
      s.bind(1, run).bind(2, static_cast<int64_t>(c.island)).bind(3, static_cast<int64_t>(c.cell.a));
      s.bind(4, static_cast<int64_t>(c.cell.b)).bind(5, c.elite.id).bind(6, c.elite.speedup);
      s.bind(7, static_cast<int64_t>(c.elite.migrant));
      s.run();
    }
  }
}

void RunDatabase::load_island(int64_t run, int island, std::vector<std::pair<Elite, Cell>> *members,
                              std::map<Cell, Elite> *grid) {
  Statement m(*this,
              "SELECT candidate, speedup, migrant, a, b FROM members WHERE run = ?1 AND island = ?2 ORDER BY position");
  m.bind(1, run).bind(2, static_cast<int64_t>(island));
  while (m.step())
    members->push_back({Elite{m.text(0), m.real(1), m.integer(2) != 0},
                        Cell{static_cast<int>(m.integer(3)), static_cast<int>(m.integer(4))}});
  Statement g(*this, "SELECT a, b, candidate, speedup, migrant FROM cells WHERE run = ?1 AND island = ?2");
  g.bind(1, run).bind(2, static_cast<int64_t>(island));
  while (g.step())
    (*grid)[Cell{static_cast<int>(g.integer(0)), static_cast<int>(g.integer(1))}] =
        Elite{g.text(2), g.real(3), g.integer(4) != 0};
}

void RunDatabase::limit_pages(int64_t pages) { exec("PRAGMA max_page_count = " + std::to_string(pages)); }

std::string RunDatabase::integrity_check() {
  Statement s(*this, "PRAGMA integrity_check");
  std::string out;
  while (s.step()) out += (out.empty() ? "" : "; ") + s.text(0);
  return out;
}

}  // namespace ks
