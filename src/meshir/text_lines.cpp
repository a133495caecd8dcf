// MeshIR's text form line by line: header items, regions, ops and costed parameters, and the
// whole-text checks (tokens and values are text.cpp).
#include "detail/text_parser.hpp"

namespace wavel::meshir::detail {

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
  } else if (keyword == "sram_per_pe_bytes" || keyword == "sram_reserved_per_pe_bytes" || keyword == "colours" ||
             keyword == "requests" || keyword == "microbatches" || keyword == "prompt_chunks") {
    if (!header(1, keyword + " N")) return;
    std::int64_t& field = keyword == "sram_per_pe_bytes"            ? s.sram_per_pe_bytes
                          : keyword == "sram_reserved_per_pe_bytes" ? s.sram_reserved_per_pe_bytes
                          : keyword == "colours"         ? s.colours
                          : keyword == "requests"        ? s.concurrent_requests
                          : keyword == "microbatches"    ? s.microbatches
                                                         : s.prompt_chunks;
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

}  // namespace wavel::meshir::detail

namespace wavel::meshir {

ParsedSchedule parse_with_lines(const std::string& text, const std::string& file_label) {
  return detail::Parser(file_label).run(text);
}

Schedule parse(const std::string& text, const std::string& file_label) {
  return parse_with_lines(text, file_label).schedule;
}

}  // namespace wavel::meshir
