// Writing reports and diffs as aligned text, CSV, JSON or HTML.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "report/report.h"

namespace epprof::report {

enum class Format { kText, kCsv, kJson, kHtml };
bool parse_format(const std::string& s, Format* out);

// A table of strings; numeric columns are right-aligned in text output.
struct Table {
  std::string title;
  std::vector<std::string> header;
  std::vector<bool> numeric;
  std::vector<std::vector<std::string>> rows;
};

std::string json_escape(std::string_view s);  // with the quotes
std::string csv_escape(std::string_view s);
std::string fixed(double v, int decimals);    // "%.*f"

void write_text_table(const Table& t, std::string* out);
// One CSV block: a header line, then one line per row led by `table_name`.
void write_csv(const Table& t, const std::string& table_name, std::string* out);
// Every table as a CSV block, blank lines between; names[i] names tables[i].
void write_csv_tables(const std::vector<Table>& tables, const char* const* names, std::string* out);

// The tables of a report: the --by table, host vs device per node, counters.
std::vector<Table> report_tables(const Report& r);

void write_report(const Report& r, Format f, std::string* out);  // text, csv or json
void write_diff(const std::vector<DiffRow>& rows, const std::string& title, Format f, std::string* out);

// One self-contained HTML page: timeline, per-op chart, tables.
void write_html(const Trace& trace, const Report& report, std::string* out);

}  // namespace epprof::report
