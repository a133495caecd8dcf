// Parser of the MeshIR text form (one header item, region or op per line, `#` comments); the printer
// is print.cpp.
#include "wavel/meshir/text.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <charconv>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

#include "wavel/common/error.hpp"
#include "wavel/config/schema.hpp"

namespace wavel::meshir {

namespace {

/// A piece of a line with the 1-based column where it starts.
struct Piece {
  std::string_view text;
  int column = 0;
};

const std::vector<std::string> header_keywords{"meshir",  "schedule", "grid",         "sram_per_pe_bytes",
                                               "colours", "requests", "microbatches", "layers"};
const std::vector<std::string> line_keywords{"meshir",   "schedule",     "grid",   "sram_per_pe_bytes",
                                             "colours",  "requests",     "microbatches", "layers",
                                             "wafers",   "defect",       "region", "op",
                                             "costed_on", "param"};
const std::vector<std::string> op_keys{"kernel", "region", "used",   "step", "stage",     "inputs",
                                       "in",     "out",    "reduce", "group", "rounds", "to_region", "repeat", "attn", "work"};
// Fields added after MeshIR 2 was published: written when set, absent means their default.
const std::vector<std::string> optional_op_keys{"skewed"};
const std::vector<std::string> layout_keys{"x", "y", "part", "repl", "tile"};
const std::vector<std::string> work_keys{"batch", "m", "k", "n", "flops", "weight_bytes", "input_bytes",
                                         "output_bytes", "kv_cache_bytes", "heads", "kv_heads"};
const std::vector<std::string> optional_work_keys{"fused", "scalar_elements", "scalar_instructions", "scalar_divisions"};

std::vector<std::string> kernel_names() {
  std::vector<std::string> names;
  // Kernel is a plain enumeration from meshgemm to moe_combine; the list only feeds suggestions.
  for (int k = 0; k <= static_cast<int>(Kernel::moe_combine); ++k) {
    names.emplace_back(to_string(static_cast<Kernel>(k)));
  }
  return names;
}

std::string suggestion_suffix(std::string_view word, const std::vector<std::string>& candidates) {
  const std::string best = config::did_you_mean(std::string(word), candidates);
  return best.empty() ? std::string() : " (did you mean '" + best + "'?)";
}

std::string list_text(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// Supported sizes (README "Input limits"): far above the schedules the search writes, and small
// enough that the verifier and the cost model check any file within seconds.
constexpr std::size_t kMaxRegions = 4096;
constexpr std::size_t kMaxOps = std::size_t{1} << 17;
constexpr std::size_t kMaxCostedParams = 256;  // the tool writes about 20

// A preset or parameter name: lower-case letters, digits, '_' and '.'.
bool is_name(std::string_view text) {
  if (text.empty() || text.size() > 64) return false;
  for (const char c : text) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.')) return false;
  }
  return true;
}

/// Collects the diagnostics of one text, line by line.
class Parser {
 public:
  explicit Parser(std::string file_label) : file_(std::move(file_label)) {}

  ParsedSchedule run(const std::string& text);

 private:
  void error(int column, const std::string& key_path, const std::string& message) {
    diagnostics_.push_back(Diagnostic{file_, line_, column, key_path, message});
  }

  std::vector<Piece> tokenize(std::string_view line, bool& damaged);
  void parse_line(const std::vector<Piece>& tokens, int end_column, bool damaged);
  bool check_arity(const std::vector<Piece>& tokens, std::size_t values, const std::string& usage,
                   const std::string& key_path, int end_column);
  bool first_header(const std::string& keyword, int column);

  template <class Int>
  std::optional<Int> integer(const Piece& piece, const std::string& key_path);
  std::optional<std::string> quoted(const Piece& piece, const std::string& key_path);
  std::optional<std::pair<std::int64_t, std::int64_t>> pair(const Piece& piece, const std::string& key_path);
  std::optional<Rect> rect(const Piece& piece, const std::string& key_path);
  std::optional<std::vector<int>> index_list(const Piece& piece, const std::string& key_path);
  std::optional<Dim> dim(const Piece& piece, const std::string& key_path);
  std::vector<std::pair<std::string, Piece>> fields(const std::vector<Piece>& items, char separator,
                                                    const std::vector<std::string>& keys,
                                                    const std::string& key_prefix, int missing_column,
                                                    const std::vector<std::string>& optional = {});
  void layout(const Piece& piece, const std::string& key_path, Layout& out);
  void work(const Piece& piece, const std::string& key_path, OpWork& out);

  void parse_region(const std::vector<Piece>& tokens, int end_column);
  void parse_param(const std::vector<Piece>& tokens, int end_column);
  void parse_op(const std::vector<Piece>& tokens, int end_column);

  std::string file_;
  int line_ = 0;
  bool seen_content_ = false;
  ParsedSchedule result_;
  std::vector<Diagnostic> diagnostics_;
};

/// Splits a line into whitespace-separated pieces. Double quotes protect whitespace and `#`;
/// `#` outside quotes starts a comment.
std::vector<Piece> Parser::tokenize(std::string_view line, bool& damaged) {
  damaged = false;
  std::vector<Piece> tokens;
  std::size_t i = 0;
  while (i < line.size()) {
    const char c = line[i];
    if (c == ' ' || c == '\t') {
      ++i;
      continue;
    }
    if (c == '#') break;
    const std::size_t start = i;
    bool in_quotes = false;
    std::size_t quote_start = 0;
    while (i < line.size()) {
      const char d = line[i];
      if (in_quotes) {
        if (d == '\\' && i + 1 < line.size()) {
          i += 2;
          continue;
        }
        if (d == '"') in_quotes = false;
        ++i;
        continue;
      }
      if (d == ' ' || d == '\t' || d == '#') break;
      if (d == '"') {
        in_quotes = true;
        quote_start = i;
      }
      ++i;
    }
    if (in_quotes) {
      error(static_cast<int>(quote_start) + 1, "", "unterminated quoted string");
      damaged = true;
    }
    tokens.push_back(Piece{line.substr(start, i - start), static_cast<int>(start) + 1});
  }
  return tokens;
}

template <class Int>
std::optional<Int> Parser::integer(const Piece& piece, const std::string& key_path) {
  std::int64_t value = 0;
  const char* first = piece.text.data();
  const char* last = first + piece.text.size();
  const auto [end, ec] = std::from_chars(first, last, value);
  if (piece.text.empty() || ec == std::errc::invalid_argument || end != last) {
    error(piece.column, key_path, "expected an integer, got '" + std::string(piece.text) + "'");
    return std::nullopt;
  }
  if (ec == std::errc::result_out_of_range || value < std::numeric_limits<Int>::min() ||
      value > std::numeric_limits<Int>::max()) {
    error(piece.column, key_path, "integer " + std::string(piece.text) + " is out of range");
    return std::nullopt;
  }
  return static_cast<Int>(value);
}

std::optional<std::string> Parser::quoted(const Piece& piece, const std::string& key_path) {
  const std::string_view t = piece.text;
  if (t.size() < 2 || t.front() != '"') {
    error(piece.column, key_path, "expected a quoted name like \"layer.0.q_proj\", got '" + std::string(t) + "'");
    return std::nullopt;
  }
  std::string out;
  bool ok = true;
  std::size_t i = 1;
  for (; i < t.size(); ++i) {
    const char c = t[i];
    if (c == '"') break;
    if (c != '\\') {
      out += c;
      continue;
    }
    const int column = piece.column + static_cast<int>(i);
    if (i + 1 >= t.size()) break;  // the tokenizer already reported the open quote
    const char e = t[++i];
    if (e == '"' || e == '\\') {
      out += e;
    } else if (e == 'n') {
      out += '\n';
    } else if (e == 't') {
      out += '\t';
    } else if (e == 'r') {
      out += '\r';
    } else if (e == 'x' && i + 2 < t.size() && std::isxdigit(static_cast<unsigned char>(t[i + 1])) &&
               std::isxdigit(static_cast<unsigned char>(t[i + 2]))) {
      out += static_cast<char>(std::stoi(std::string(t.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      error(column, key_path, "unknown escape '\\" + std::string(1, e) + "' (use \\\" \\\\ \\n \\t \\r or \\xHH)");
      ok = false;
    }
  }
  if (i >= t.size()) return std::nullopt;  // unterminated, reported by the tokenizer
  if (i + 1 != t.size()) {
    error(piece.column + static_cast<int>(i) + 1, key_path, "unexpected characters after the closing quote");
    return std::nullopt;
  }
  if (!ok) return std::nullopt;
  return out;
}

/// Splits `piece` at each `separator`, keeping columns.
std::vector<Piece> split(const Piece& piece, char separator) {
  std::vector<Piece> parts;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= piece.text.size(); ++i) {
    if (i == piece.text.size() || piece.text[i] == separator) {
      parts.push_back(Piece{piece.text.substr(start, i - start), piece.column + static_cast<int>(start)});
      start = i + 1;
    }
  }
  return parts;
}

std::optional<std::pair<std::int64_t, std::int64_t>> Parser::pair(const Piece& piece, const std::string& key_path) {
  const auto parts = split(piece, 'x');
  if (parts.size() != 2) {
    error(piece.column, key_path, "expected two integers as AxB, got '" + std::string(piece.text) + "'");
    return std::nullopt;
  }
  const auto a = integer<std::int64_t>(parts[0], key_path);
  const auto b = integer<std::int64_t>(parts[1], key_path);
  if (!a || !b) return std::nullopt;
  return std::make_pair(*a, *b);
}

std::optional<Rect> Parser::rect(const Piece& piece, const std::string& key_path) {
  const auto parts = split(piece, ',');
  if (parts.size() != 4) {
    error(piece.column, key_path, "expected a rectangle X,Y,W,H, got '" + std::string(piece.text) + "'");
    return std::nullopt;
  }
  std::int64_t v[4] = {0, 0, 0, 0};
  bool ok = true;
  for (std::size_t i = 0; i < 4; ++i) {
    const auto value = integer<std::int64_t>(parts[i], key_path);
    if (value) {
      v[i] = *value;
    } else {
      ok = false;
    }
  }
  if (!ok) return std::nullopt;
  return Rect{v[0], v[1], v[2], v[3]};
}

std::optional<std::vector<int>> Parser::index_list(const Piece& piece, const std::string& key_path) {
  if (piece.text == "-") return std::vector<int>{};
  std::vector<int> out;
  bool ok = true;
  for (const auto& part : split(piece, ',')) {
    if (const auto v = integer<int>(part, key_path)) {
      out.push_back(*v);
    } else {
      ok = false;
    }
  }
  if (!ok) return std::nullopt;
  return out;
}

std::optional<Dim> Parser::dim(const Piece& piece, const std::string& key_path) {
  if (const auto d = parse_dim(piece.text)) return d;
  error(piece.column, key_path,
        "unknown dimension '" + std::string(piece.text) + "', expected one of none, tokens, features" +
            suggestion_suffix(piece.text, {"none", "tokens", "features"}));
  return std::nullopt;
}

/// Reads `key<separator>value` items. Reports malformed items, unknown and repeated keys, and keys
/// of `keys` that are missing (at `missing_column`). Returns the good items in input order.
std::vector<std::pair<std::string, Piece>> Parser::fields(const std::vector<Piece>& items, char separator,
                                                          const std::vector<std::string>& keys,
                                                          const std::string& key_prefix, int missing_column,
                                                          const std::vector<std::string>& optional) {
  std::vector<std::pair<std::string, Piece>> out;
  std::vector<std::string> allowed = keys;
  allowed.insert(allowed.end(), optional.begin(), optional.end());
  std::map<std::string, int> seen;
  for (const auto& item : items) {
    const auto at = item.text.find(separator);
    if (at == std::string_view::npos || at == 0) {
      error(item.column, key_prefix,
            "expected key" + std::string(1, separator) + "value, got '" + std::string(item.text) + "'");
      continue;
    }
    const std::string key(item.text.substr(0, at));
    const std::string path = key_prefix + "." + key;
    bool known = false;
    for (const auto& k : allowed) known = known || k == key;
    if (!known) {
      error(item.column, path, "unknown field '" + key + "'" + suggestion_suffix(key, allowed));
      continue;
    }
    if (const auto it = seen.find(key); it != seen.end()) {
      error(item.column, path, "field '" + key + "' given twice (first at column " + std::to_string(it->second) + ")");
      continue;
    }
    seen.emplace(key, item.column);
    out.emplace_back(key, Piece{item.text.substr(at + 1), item.column + static_cast<int>(at) + 1});
  }
  for (const auto& k : keys) {
    if (seen.count(k) == 0) error(missing_column, key_prefix + "." + k, "missing field '" + k + "'");
  }
  return out;
}

void Parser::layout(const Piece& piece, const std::string& key_path, Layout& out) {
  const int end = piece.column + static_cast<int>(piece.text.size());
  for (const auto& [key, value] : fields(split(piece, ','), ':', layout_keys, key_path, end)) {
    const std::string path = key_path + "." + key;
    if (key == "x") {
      if (const auto d = dim(value, path)) out.on_x = *d;
    } else if (key == "y") {
      if (const auto d = dim(value, path)) out.on_y = *d;
    } else if (const auto p = pair(value, path)) {
      if (key == "part") {
        std::tie(out.part_x, out.part_y) = *p;
      } else if (key == "repl") {
        std::tie(out.repl_x, out.repl_y) = *p;
      } else {
        std::tie(out.tile_rows, out.tile_cols) = *p;
      }
    }
  }
}

void Parser::work(const Piece& piece, const std::string& key_path, OpWork& out) {
  const int end = piece.column + static_cast<int>(piece.text.size());
  for (const auto& [key, value] : fields(split(piece, ','), ':', work_keys, key_path, end, optional_work_keys)) {
    const auto v = integer<std::int64_t>(value, key_path + "." + key);
    if (!v) continue;
    if (key == "batch") out.batch = *v;
    if (key == "m") out.m = *v;
    if (key == "k") out.k = *v;
    if (key == "n") out.n = *v;
    if (key == "flops") out.flops = *v;
    if (key == "weight_bytes") out.weight_bytes = *v;
    if (key == "input_bytes") out.input_bytes = *v;
    if (key == "output_bytes") out.output_bytes = *v;
    if (key == "kv_cache_bytes") out.kv_cache_bytes = *v;
    if (key == "heads") out.heads = *v;
    if (key == "kv_heads") out.kv_heads = *v;
    if (key == "fused") out.fused = *v;
    if (key == "scalar_elements") out.scalar_elements = *v;
    if (key == "scalar_instructions") out.scalar_instructions = *v;
    if (key == "scalar_divisions") out.scalar_divisions = *v;
  }
}

bool Parser::check_arity(const std::vector<Piece>& tokens, std::size_t values, const std::string& usage,
                         const std::string& key_path, int end_column) {
  if (tokens.size() < values + 1) {
    error(end_column, key_path, "expected '" + usage + "'");
    return false;
  }
  if (tokens.size() > values + 1) {
    error(tokens[values + 1].column, key_path,
          "unexpected '" + std::string(tokens[values + 1].text) + "' at the end of '" + usage + "'");
  }
  return true;
}

/// Records the line of a header keyword; false (with a diagnostic) if it was given before.
bool Parser::first_header(const std::string& keyword, int column) {
  auto& lines = result_.lines.header;
  if (const auto it = lines.find(keyword); it != lines.end()) {
    error(column, keyword, "duplicate '" + keyword + "' line (first on line " + std::to_string(it->second) + ")");
    return false;
  }
  lines.emplace(keyword, line_);
  return true;
}

void Parser::parse_param(const std::vector<Piece>& tokens, int end_column) {
  Schedule& s = result_.schedule;
  const std::string path = "param[" + std::to_string(s.costed_params.size()) + "]";
  if (s.costed_params.size() >= kMaxCostedParams) {
    error(tokens[0].column, path, "more than " + std::to_string(kMaxCostedParams) + " 'param' lines");
    return;
  }
  s.costed_params.emplace_back();
  result_.lines.costed_params.push_back(line_);
  if (!check_arity(tokens, 2, "param NAME VALUE", path, end_column)) return;
  const std::string_view name = tokens[1].text, value = tokens[2].text;
  if (!is_name(name)) {
    error(tokens[1].column, path, "expected a parameter name, got '" + std::string(name) + "'");
    return;
  }
  for (std::size_t i = 0; i + 1 < s.costed_params.size(); ++i) {
    if (s.costed_params[i].name == name) {
      error(tokens[1].column, path, "duplicate parameter '" + std::string(name) + "' (first on line " +
                                        std::to_string(result_.lines.costed_params[i]) + ")");
      return;
    }
  }
  double v = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || end != value.data() + value.size() || !std::isfinite(v)) {
    error(tokens[2].column, path + "." + std::string(name), "expected a finite number, got '" + std::string(value) + "'");
    return;
  }
  s.costed_params.back() = CostedParam{std::string(name), v};
}

void Parser::parse_region(const std::vector<Piece>& tokens, int end_column) {
  Schedule& s = result_.schedule;
  const int index = static_cast<int>(s.regions.size());
  const std::string path = "regions[" + std::to_string(index) + "]";
  s.regions.emplace_back();
  result_.lines.regions.push_back(line_);
  // `wafer N` after the rectangle places the region on wafer N of a multi-wafer schedule.
  const bool on_wafer = tokens.size() >= 7 && tokens[6].text == "wafer";
  if (!check_arity(tokens, on_wafer ? 7 : 5, on_wafer ? "region INDEX X Y W H wafer N" : "region INDEX X Y W H", path,
                   end_column)) {
    return;
  }
  if (on_wafer) {
    s.region_wafers.resize(s.regions.size(), 0);
    if (const auto v = integer<std::int64_t>(tokens[7], path + ".wafer")) s.region_wafers.back() = *v;
  }
  if (const auto given = integer<int>(tokens[1], path + ".index"); given && *given != index) {
    error(tokens[1].column, path + ".index",
          "region index " + std::to_string(*given) + " out of order: this is region " + std::to_string(index));
  }
  const char* names[4] = {"x", "y", "w", "h"};
  std::int64_t* fields_out[4] = {&s.regions.back().x, &s.regions.back().y, &s.regions.back().w,
                                 &s.regions.back().h};
  for (std::size_t i = 0; i < 4; ++i) {
    if (const auto v = integer<std::int64_t>(tokens[i + 2], path + "." + names[i])) *fields_out[i] = *v;
  }
}

void Parser::parse_op(const std::vector<Piece>& tokens, int end_column) {
  Schedule& s = result_.schedule;
  const int index = static_cast<int>(s.ops.size());
  const std::string path = "ops[" + std::to_string(index) + "]";
  s.ops.emplace_back();
  result_.lines.ops.push_back(line_);
  PlacedOp& op = s.ops.back();
  if (tokens.size() < 3) {
    error(end_column, path, "expected 'op INDEX \"NAME\" FIELD=VALUE ...'");
    return;
  }
  if (const auto given = integer<int>(tokens[1], path + ".index"); given && *given != index) {
    error(tokens[1].column, path + ".index",
          "op index " + std::to_string(*given) + " out of order: this is op " + std::to_string(index));
  }
  if (auto name = quoted(tokens[2], path + ".name")) op.name = std::move(*name);

  const std::vector<Piece> items(tokens.begin() + 3, tokens.end());
  for (const auto& [key, value] : fields(items, '=', op_keys, path, end_column, optional_op_keys)) {
    const std::string key_path = path + "." + key;
    if (key == "kernel") {
      if (const auto k = parse_kernel(value.text)) {
        op.kernel = *k;
      } else {
        error(value.column, key_path,
              "unknown kernel '" + std::string(value.text) + "'" + suggestion_suffix(value.text, kernel_names()));
      }
    } else if (key == "region") {
      if (const auto v = integer<int>(value, key_path)) op.region = *v;
    } else if (key == "used") {
      if (const auto r = rect(value, key_path)) op.used = *r;
    } else if (key == "step") {
      if (const auto v = integer<int>(value, key_path)) op.step = *v;
    } else if (key == "stage") {
      if (const auto v = integer<int>(value, key_path)) op.stage = *v;
    } else if (key == "inputs") {
      if (auto v = index_list(value, key_path)) op.inputs = std::move(*v);
    } else if (key == "in") {
      layout(value, key_path, op.in_layout);
    } else if (key == "out") {
      layout(value, key_path, op.out_layout);
    } else if (key == "reduce") {
      if (const auto a = parse_axis(value.text)) {
        op.reduce_axis = *a;
      } else {
        error(value.column, key_path, "expected axis x or y, got '" + std::string(value.text) + "'");
      }
    } else if (key == "group") {
      if (const auto v = integer<std::int64_t>(value, key_path)) op.group = *v;
    } else if (key == "rounds") {
      if (const auto v = integer<std::int64_t>(value, key_path)) op.rounds = *v;
    } else if (key == "to_region") {
      if (const auto v = integer<int>(value, key_path)) op.to_region = *v;
    } else if (key == "attn") {
      if (const auto a = parse_attention_role(value.text)) {
        op.attention = *a;
      } else {
        error(value.column, key_path, "expected none, scores, softmax or values, got '" + std::string(value.text) + "'");
      }
    } else if (key == "repeat") {
      if (value.text == "layers" || value.text == "once") {
        op.once = value.text == "once";
      } else {
        error(value.column, key_path, "expected 'layers' or 'once', got '" + std::string(value.text) + "'");
      }
    } else if (key == "skewed") {
      if (value.text == "yes" || value.text == "no") {
        op.input_skewed = value.text == "yes";
      } else {
        error(value.column, key_path, "expected 'yes' or 'no', got '" + std::string(value.text) + "'");
      }
    } else if (key == "work") {
      work(value, key_path, op.work);
    }
  }
}

void Parser::parse_line(const std::vector<Piece>& tokens, int end_column, bool damaged) {
  Schedule& s = result_.schedule;
  const std::string keyword(tokens[0].text);
  const bool first = !seen_content_;
  seen_content_ = true;
  if (damaged) {
    // An open quote swallowed the rest of the line: keep the item count so later indices stay
    // right, but report nothing more about this line.
    if (keyword == "op") {
      s.ops.emplace_back();
      result_.lines.ops.push_back(line_);
    } else if (keyword == "region") {
      s.regions.emplace_back();
      result_.lines.regions.push_back(line_);
    } else if (keyword == "defect") {
      s.defective_pes.emplace_back(0, 0);
      result_.lines.defects.push_back(line_);
    } else if (keyword == "param" && s.costed_params.size() < kMaxCostedParams) {
      s.costed_params.emplace_back();
      result_.lines.costed_params.push_back(line_);
    } else if (result_.lines.header.count(keyword) == 0) {
      result_.lines.header.emplace(keyword, line_);
    }
    return;
  }
  if (first && keyword != "meshir") {
    error(tokens[0].column, "meshir",
          "the text must start with 'meshir " + std::to_string(text_format_version) + "'");
  }
  // A header keyword is read once, with exactly `values` values after it.
  auto header = [&](std::size_t values, const std::string& usage) {
    return first_header(keyword, tokens[0].column) && check_arity(tokens, values, usage, keyword, end_column);
  };
  if (keyword == "meshir") {
    if (!header(1, "meshir VERSION")) return;
    if (const auto v = integer<int>(tokens[1], "meshir"); v && *v != text_format_version) {
      error(tokens[1].column, "meshir",
            "unsupported MeshIR version " + std::to_string(*v) + " (this tool reads version " +
                std::to_string(text_format_version) + ")");
    }
  } else if (keyword == "schedule") {
    if (!header(1, "schedule \"NAME\"")) return;
    if (auto name = quoted(tokens[1], keyword)) s.name = std::move(*name);
  } else if (keyword == "grid") {
    if (!header(2, "grid W H")) return;
    if (const auto v = integer<std::int64_t>(tokens[1], "grid.w")) s.grid_w_pes = *v;
    if (const auto v = integer<std::int64_t>(tokens[2], "grid.h")) s.grid_h_pes = *v;
  } else if (keyword == "sram_per_pe_bytes" || keyword == "colours" || keyword == "requests" ||
             keyword == "microbatches") {
    if (!header(1, keyword + " N")) return;
    std::int64_t& field = keyword == "sram_per_pe_bytes" ? s.sram_per_pe_bytes
                          : keyword == "colours"         ? s.colours
                          : keyword == "requests"        ? s.concurrent_requests
                                                         : s.microbatches;
    if (const auto v = integer<std::int64_t>(tokens[1], keyword)) field = *v;
  } else if (keyword == "layers") {
    if (!header(3, "layers N scale S")) return;
    if (const auto v = integer<std::int64_t>(tokens[1], "layers")) s.layers_total = *v;
    if (tokens[2].text != "scale") {
      error(tokens[2].column, "layers.scale", "expected 'scale', got '" + std::string(tokens[2].text) + "'");
    }
    if (const auto v = integer<std::int64_t>(tokens[3], "layers.scale")) s.layer_scale = *v;
  } else if (keyword == "wafers") {
    if (!header(7, "wafers N link_bytes_per_s B link_latency_ns L io_edge EDGE")) return;
    if (const auto v = integer<std::int64_t>(tokens[1], "wafers")) s.wafers = *v;
    const std::pair<const char*, std::int64_t*> named[] = {{"link_bytes_per_s", &s.link_bytes_per_s},
                                                           {"link_latency_ns", &s.link_latency_ns}};
    for (std::size_t i = 0; i < 2; ++i) {
      const Piece& key = tokens[2 + 2 * i];
      if (key.text != named[i].first) {
        error(key.column, std::string("wafers.") + named[i].first,
              std::string("expected '") + named[i].first + "', got '" + std::string(key.text) + "'");
      } else if (const auto v = integer<std::int64_t>(tokens[3 + 2 * i], std::string("wafers.") + named[i].first)) {
        *named[i].second = *v;
      }
    }
    if (tokens[6].text != "io_edge") {
      error(tokens[6].column, "wafers.io_edge", "expected 'io_edge', got '" + std::string(tokens[6].text) + "'");
    } else if (const auto e = parse_edge(tokens[7].text)) {
      s.io_edge = *e;
    } else {
      error(tokens[7].column, "wafers.io_edge",
            "unknown edge '" + std::string(tokens[7].text) + "', expected west, east, north or south");
    }
  } else if (keyword == "defect") {
    const std::string path = "defects[" + std::to_string(s.defective_pes.size()) + "]";
    s.defective_pes.emplace_back(0, 0);
    result_.lines.defects.push_back(line_);
    if (!check_arity(tokens, 2, "defect X Y", path, end_column)) return;
    if (const auto v = integer<std::int64_t>(tokens[1], path + ".x")) s.defective_pes.back().first = *v;
    if (const auto v = integer<std::int64_t>(tokens[2], path + ".y")) s.defective_pes.back().second = *v;
  } else if (keyword == "costed_on") {
    if (!header(1, "costed_on PRESET")) return;
    if (is_name(tokens[1].text)) {
      s.costed_on = std::string(tokens[1].text);
    } else {
      error(tokens[1].column, keyword, "expected a wafer preset name, got '" + std::string(tokens[1].text) + "'");
    }
  } else if (keyword == "param") {
    parse_param(tokens, end_column);
  } else if (keyword == "region") {
    parse_region(tokens, end_column);
  } else if (keyword == "op") {
    parse_op(tokens, end_column);
  } else {
    error(tokens[0].column, keyword,
          "unknown line '" + keyword + "', expected one of " + list_text(line_keywords) +
              suggestion_suffix(keyword, line_keywords));
  }
}

ParsedSchedule Parser::run(const std::string& text) {
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    ++line_;
    bool damaged = false;
    const auto tokens = tokenize(line, damaged);
    if (!tokens.empty()) {
      const auto& last = tokens.back();
      parse_line(tokens, last.column + static_cast<int>(last.text.size()), damaged);
    }
    // Past these counts the checks' pairwise work would run for minutes: stop reading at once.
    const Schedule& so_far = result_.schedule;
    if (so_far.regions.size() > kMaxRegions || so_far.ops.size() > kMaxOps) {
      const bool regions = so_far.regions.size() > kMaxRegions;
      throw DataError({Diagnostic{file_, line_, 1, regions ? "regions" : "ops",
                                  std::string("more than ") + std::to_string(regions ? kMaxRegions : kMaxOps) +
                                      (regions ? " regions" : " ops") +
                                      ", the most a schedule may have (the tool's own have a few dozen regions "
                                      "and a few thousand ops)"}});
    }
    start = end + 1;
  }
  Schedule& s = result_.schedule;
  if (!s.region_wafers.empty()) s.region_wafers.resize(s.regions.size(), 0);
  for (const auto& keyword : header_keywords) {
    if (result_.lines.header.count(keyword) == 0) {
      diagnostics_.push_back(Diagnostic{file_, 0, 0, keyword, "missing '" + keyword + "' line"});
    }
  }
  if (!diagnostics_.empty()) {
    std::stable_sort(diagnostics_.begin(), diagnostics_.end(), [](const Diagnostic& a, const Diagnostic& b) {
      return a.line != b.line ? a.line < b.line : a.column < b.column;
    });
    throw DataError(std::move(diagnostics_));
  }
  return std::move(result_);
}

}  // namespace

ParsedSchedule parse_with_lines(const std::string& text, const std::string& file_label) {
  return Parser(file_label).run(text);
}

Schedule parse(const std::string& text, const std::string& file_label) {
  return parse_with_lines(text, file_label).schedule;
}

}  // namespace wavel::meshir
