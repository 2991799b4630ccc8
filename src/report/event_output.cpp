#include "report/event_output.h"

#include <cmath>
#include <cstdlib>

#include "export/integer_us.h"
#include "io/atomic_file.h"
#include "report/format.h"
#include "tracedb/schema.h"
#include "tracedb/writer.h"

namespace epprof::report {
namespace {

// Microseconds with nanosecond precision, no trailing zeros.
std::string micros(double us) {
  std::string s = fixed(us, 3);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

void args_json(const Event& e, const std::map<std::string, std::string>* replace, const std::string& exact_dur,
               std::string* out) {
  *out += '{';
  bool first = true;
  auto sep = [&] {
    if (!first) *out += ',';
    first = false;
  };
  for (const Arg& a : e.args) {
    sep();
    *out += json_escape(a.key) + ":";
    const auto it = replace ? replace->find(std::string(a.key)) : std::map<std::string, std::string>::const_iterator();
    if (replace && it != replace->end())
      *out += it->second;
    else if (a.kind == ValueKind::kString)
      *out += json_escape(a.value);
    else
      *out += a.value;
  }
  if (replace)
    for (const auto& [k, v] : *replace) {
      if (e.arg(k)) continue;
      sep();
      *out += json_escape(k) + ":" + v;
    }
  if (!exact_dur.empty() && !e.arg("dur_ns")) {
    sep();
    *out += "\"dur_ns\":\"" + exact_dur + "\"";
  }
  *out += '}';
}

class JsonOutput final : public EventOutput {
 public:
  JsonOutput(std::unique_ptr<io::AtomicFile> file, bool integer) : file_(std::move(file)), integer_(integer) {
    buf_ = "[\n";
  }
  bool add(const Event& e, const EventEdit* edit) override {
    if (!error_.empty()) return false;
    if (!first_) buf_ += ",\n";
    first_ = false;
    event_json(e, edit, integer_, &buf_);
    return buf_.size() < (size_t(1) << 20) || flush();
  }
  bool finish() override {
    buf_ += "\n]\n";
    return flush() && file_->commit(&error_);
  }

 private:
  bool flush() {
    if (error_.empty() && !file_->write(buf_, &error_)) return false;
    buf_.clear();
    return error_.empty();
  }
  std::unique_ptr<io::AtomicFile> file_;
  bool integer_;
  std::string buf_;
  bool first_ = true;
};

class DatabaseOutput final : public EventOutput {
 public:
  DatabaseOutput(std::unique_ptr<io::AtomicFile> file, std::unique_ptr<tracedb::Writer> db)
      : file_(std::move(file)), db_(std::move(db)) {
    database_ = true;
  }

  bool add(const Event& e, const EventEdit* edit) override {
    if (!error_.empty()) return false;
    if (!edit) return add_plain(e);
    // Merge's edits are made on the JSON text; the database takes the
    // event read back from it.
    text_.clear();
    event_json(e, edit, false, &text_);
    ReadResult r = read_trace_buffer("[" + text_ + "]", [&](const Event& edited, std::string*) {
      return add_plain(edited);
    });
    if (!r.ok && error_.empty()) error_ = "an edited event did not read back: " + r.error;
    return error_.empty();
  }

  bool finish() override {
    if (!error_.empty()) return false;
    std::string error;
    const bool ok = db_->finish(&error);
    db_.reset();
    if (!ok) {
      error_ = "cannot write '" + file_->final_path() + "': " + error;
      return false;
    }
    return file_->commit(&error_);
  }

 private:
  void other(const Event& e) {
    if (!e.text.empty()) {
      db_->other_event(e.pid, e.text);
      return;
    }
    text_.clear();
    event_json(e, nullptr, false, &text_);
    db_->other_event(e.pid, text_);
  }

  bool times(const Event& e, int64_t* ts, int64_t* dur) {
    *dur = 0;
    return micros_text_to_ns(e.ts_raw, ts) && (!e.has_dur || micros_text_to_ns(e.dur_raw, dur));
  }

  bool add_plain(const Event& e) {
    int64_t ts = 0, dur = 0;
    const bool timed = e.has_pid && e.has_tid && e.has_ts && times(e, &ts, &dur);
    bool plain = true;  // no top-level members but a flow's own
    for (const Arg& x : e.extra) plain = plain && (x.key == "id" || x.key == "bp");
    if (e.ph == "X" && timed && e.has_dur && e.extra.empty() && (e.has_args || e.args.empty())) {
      complete(e, ts, dur);
    } else if ((e.ph == "s" || e.ph == "f" || e.ph == "t") && timed && plain && !e.id.empty()) {
      int64_t id;
      if (!arg_as_int(Arg{"id", e.id, ValueKind::kNumber}, &id)) {
        other(e);
      } else if (e.ph == "s") {
        db_->flow_start(e.pid, uint64_t(id), e.cat, e.name, e.tid, ts);
      } else {
        std::string_view bp;
        for (const Arg& x : e.extra)
          if (x.key == "bp" && x.value.size() >= 2 && x.value.front() == '"') bp = x.value.substr(1, x.value.size() - 2);
        db_->flow_end(e.pid, uint64_t(id), e.tid, ts, bp);
      }
    } else if (e.ph == "C" && timed && e.extra.empty() && counter(e, ts)) {
    } else if (e.ph == "M" && e.has_pid && e.extra.empty() && metadata(e)) {
    } else {
      other(e);
    }
    return error_.empty();
  }

  void complete(const Event& e, int64_t ts, int64_t dur) {
    args_.clear();
    tracedb::EventIn row;
    row.pid = e.pid;
    row.tid = e.tid;
    row.cat = e.cat;
    row.name = e.name;
    row.ts_ns = ts;
    row.dur_ns = dur;
    for (const Arg& a : e.args) {
      int64_t v;
      if (a.key == tracedb::kCorrelationKey && !row.has_correlation && arg_as_int(a, &v) && v >= 0) {
        row.has_correlation = true;
        row.correlation_id = uint64_t(v);
        continue;
      }
      // An integer-µs trace's exact length of a sub-µs slice.
      if (a.key == "dur_ns" && arg_as_int(a, &v) && exporter::needs_exact_dur(v) && dur <= 1000) {
        row.dur_ns = v;
        continue;
      }
      args_.push_back({a.key, a.value, a.kind != ValueKind::kString});
    }
    row.args = args_.data();
    row.num_args = args_.size();
    if (tracedb::is_device_category(e.cat))
      db_->device_event(row);
    else
      db_->host_event(row);
  }

  bool counter(const Event& e, int64_t ts) {
    for (const Arg& a : e.args) {
      double v;
      if (!arg_as_double(a, &v) || a.kind != ValueKind::kNumber) return false;
    }
    for (const Arg& a : e.args) {
      double v;
      arg_as_double(a, &v);
      db_->counter(e.pid, e.tid, e.name, a.key, ts, v);
    }
    return true;
  }

  bool metadata(const Event& e) {
    const Arg* name = e.arg("name");
    if ((e.name == "process_name" || e.name == "thread_name") && name && name->kind == ValueKind::kString &&
        e.args.size() == 1) {
      if (e.name == "process_name")
        db_->process_name(e.pid, name->value);
      else if (e.has_tid)
        db_->track_name(e.pid, e.tid, name->value, tracedb::TrackKind::kThread);
      else
        return false;
      return true;
    }
    if (e.name != "epprof_metadata") return false;
    for (const Arg& a : e.args) db_->metadata(e.pid, a.key, a.value, a.kind != ValueKind::kString);
    return true;
  }

  std::unique_ptr<io::AtomicFile> file_;
  std::unique_ptr<tracedb::Writer> db_;
  std::vector<tracedb::ArgIn> args_;
  std::string text_;
};

}  // namespace

bool micros_text_to_ns(std::string_view t, int64_t* ns) {
  if (t.empty()) return false;
  size_t i = 0;
  const bool neg = t[0] == '-';
  if (neg) ++i;
  int64_t whole = 0, frac = 0;
  size_t digits = 0, frac_digits = 0;
  bool round_up = false;
  for (; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i, ++digits) {
    if (whole > (INT64_MAX / 1000 - 9) / 10) return false;
    whole = whole * 10 + (t[i] - '0');
  }
  if (i < t.size() && t[i] == '.') {
    for (++i; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i, ++frac_digits) {
      if (frac_digits < 3) frac = frac * 10 + (t[i] - '0');
      else if (frac_digits == 3) round_up = t[i] >= '5';
    }
  }
  if (digits == 0 && frac_digits == 0) return false;
  if (i < t.size()) {  // an exponent, or not a number: through a double
    const std::string s(t);
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (*end != '\0' || !std::isfinite(v) || std::fabs(v) > 9e15) return false;
    *ns = int64_t(std::llround(v * 1000.0));
    return true;
  }
  for (size_t k = frac_digits; k < 3; ++k) frac *= 10;
  const int64_t mag = whole * 1000 + frac + (round_up ? 1 : 0);
  *ns = neg ? -mag : mag;
  return true;
}

void event_json(const Event& e, const EventEdit* edit, bool integer_us, std::string* out) {
  const bool metadata = e.ph == "M";
  const bool shifted = edit && edit->ts_offset_us != 0 && !metadata;
  int64_t ts_ns = 0, dur_ns = 0;
  const bool integer = integer_us && !shifted && !metadata && micros_text_to_ns(e.ts_raw, &ts_ns) &&
                       (!e.has_dur || micros_text_to_ns(e.dur_raw, &dur_ns));
  const exporter::IntegerSlice slice = exporter::integer_slice(ts_ns, dur_ns);
  *out += '{';
  if (e.has_cat) *out += "\"cat\":" + json_escape(e.cat) + ",";
  if (e.has_name) *out += "\"name\":" + json_escape(e.name) + ",";
  if (e.has_pid) *out += "\"pid\":" + std::to_string(edit && edit->set_pid ? edit->pid : e.pid) + ",";
  if (e.has_tid) *out += "\"tid\":" + std::to_string(e.tid) + ",";
  if (e.has_ts) {
    *out += "\"ts\":";
    if (shifted)
      *out += micros(e.ts + edit->ts_offset_us);
    else if (integer)
      *out += std::to_string(slice.ts);
    else
      *out += e.ts_raw;
    *out += ',';
  }
  if (e.has_dur) *out += "\"dur\":" + (integer ? std::to_string(slice.dur) : std::string(e.dur_raw)) + ",";
  if (e.has_ph) *out += "\"ph\":" + json_escape(e.ph) + ",";
  bool args_in_extra = false;
  for (const Arg& x : e.extra) {
    int64_t id;
    if (edit && x.key == "id" && arg_as_int(Arg{"id", x.value, ValueKind::kNumber}, &id))
      *out += "\"id\":" + std::to_string(uint64_t(id) + edit->id_shift) + ",";
    else
      *out += json_escape(x.key) + ":" + std::string(x.value) + ",";
    args_in_extra = args_in_extra || x.key == "args";
  }
  // Non-object "args" (not ours, but kept as is) went out with the extras.
  if (args_in_extra) {
    out->pop_back();
  } else {
    const std::string exact =
        integer && e.has_dur && exporter::needs_exact_dur(dur_ns) ? std::to_string(dur_ns) : std::string();
    *out += "\"args\":";
    args_json(e, edit ? edit->replace_args : nullptr, exact, out);
  }
  *out += '}';
}

std::unique_ptr<EventOutput> EventOutput::create(const std::string& path, const std::vector<std::string>& inputs,
                                                 const OutputOptions& options, std::string* error) {
  std::unique_ptr<io::AtomicFile> file = io::AtomicFile::create(path, error, inputs);
  if (!file) return nullptr;
  const bool database = options.format == OutputFormat::kDatabase ||
                        (options.format == OutputFormat::kAuto && tracedb::is_database_path(path));
  if (!database) return std::make_unique<JsonOutput>(std::move(file), options.integer_timestamps);
  std::string why;
  const std::string temp = file->temporary_path(&why);
  std::unique_ptr<tracedb::Writer> db = temp.empty() ? nullptr : tracedb::Writer::create(temp, &why);
  if (!db) {
    if (error) *error = "cannot write '" + path + "': " + why;
    return nullptr;
  }
  return std::make_unique<DatabaseOutput>(std::move(file), std::move(db));
}

}  // namespace epprof::report
