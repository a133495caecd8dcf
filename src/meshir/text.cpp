// Parser of the MeshIR text form (one header item, region or op per line, `#` comments): tokens and
// values; the lines are text_lines.cpp, the printer print.cpp.
#include "detail/text_parser.hpp"

namespace wavel::meshir::detail {

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
    if (key == "product_rows") {
      out.product_rows.clear();
      for (const Piece& count : split(value, '/')) {
        const auto rows = integer<std::int64_t>(count, key_path + "." + key);
        if (!rows) break;
        if (static_cast<std::int64_t>(out.product_rows.size()) >= kMaxProducts) {
          error(count.column, key_path + "." + key, "more than " + std::to_string(kMaxProducts) + " products");
          break;
        }
        out.product_rows.push_back(*rows);
      }
      continue;
    }
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
    if (key == "products") out.products = *v;
    if (key == "scalar_elements") out.scalar_elements = *v;
    if (key == "scalar_instructions") out.scalar_instructions = *v;
    if (key == "scalar_divisions") out.scalar_divisions = *v;
    for (const auto& f : wafer::vector_forms()) {
      if (key != vector_key_prefix + std::string(f.name)) continue;
      if (*v < 0 || *v > std::numeric_limits<std::int32_t>::max()) {
        error(piece.column, key_path + "." + key, "must be a count of instructions per element, got " + std::to_string(*v));
      } else {
        out.vector[static_cast<std::size_t>(f.form)] = static_cast<std::int32_t>(*v);
      }
    }
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

}  // namespace wavel::meshir::detail
