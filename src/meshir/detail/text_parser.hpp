// MeshIR's text parser, shared by text.cpp (tokens and values) and text_lines.cpp (the lines):
// private to the library.
#pragma once

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
#include "wavel/common/yaml_schema.hpp"
#include "wavel/meshir/kernels.hpp"
#include "wavel/meshir/text.hpp"

namespace wavel::meshir::detail {

/// A piece of a line with the 1-based column where it starts.
struct Piece {
  std::string_view text;
  int column = 0;
};

inline const std::vector<std::string> header_keywords{"meshir",  "schedule", "grid",         "sram_per_pe_bytes",
                                               "colours", "requests", "microbatches", "layers"};
inline const std::vector<std::string> line_keywords{"meshir",   "schedule",     "grid",   "sram_per_pe_bytes", "sram_reserved_per_pe_bytes",
                                             "colours",  "requests",     "microbatches", "prompt_chunks", "layers",
                                             "wafers",   "defect",       "region", "op",
                                             "costed_on", "param"};
inline const std::vector<std::string> op_keys{"kernel", "region", "used",   "step", "stage",     "inputs",
                                       "in",     "out",    "reduce", "group", "rounds", "to_region", "repeat", "attn", "work"};
// Fields added after MeshIR 2 was published: written when set, absent means their default.
inline const std::vector<std::string> optional_op_keys{"skewed"};
inline const std::vector<std::string> layout_keys{"x", "y", "part", "repl", "tile"};
inline const std::vector<std::string> work_keys{"batch", "m", "k", "n", "flops", "weight_bytes", "input_bytes",
                                         "output_bytes", "kv_cache_bytes", "heads", "kv_heads"};
// A vector instruction mix is one optional key per form of wafer::vector_forms(): "vec_" + its name.
inline const std::string vector_key_prefix = "vec_";
inline const std::vector<std::string> optional_work_keys = [] {
  std::vector<std::string> keys{"fused", "products", "product_rows", "scalar_elements", "scalar_instructions", "scalar_divisions"};
  for (const auto& f : wafer::vector_forms()) keys.push_back(vector_key_prefix + std::string(f.name));
  return keys;
}();

inline std::vector<std::string> kernel_names() {
  std::vector<std::string> names;
  for (const auto& k : kernel_table()) names.emplace_back(k.name);  // feeds suggestions only
  return names;
}

inline std::string suggestion_suffix(std::string_view word, const std::vector<std::string>& candidates) {
  const std::string best = yaml::did_you_mean(std::string(word), candidates);
  return best.empty() ? std::string() : " (did you mean '" + best + "'?)";
}

inline std::string list_text(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// Supported sizes (docs/cli.md, Input limits): far above the schedules the search writes, and small
// enough that the verifier and the cost model check any file within seconds.
inline constexpr std::size_t kMaxRegions = 4096;
inline constexpr std::size_t kMaxOps = std::size_t{1} << 17;
inline constexpr std::size_t kMaxCostedParams = 256;  // the tool writes about 20

// A preset or parameter name: lower-case letters, digits, '_' and '.'.
inline bool is_name(std::string_view text) {
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

}  // namespace wavel::meshir::detail
