// utils::plot_history: a History's curves drawn with cairo into a PNG (one panel per quantity). Without
// cairo (TOWER_WITH_CAIRO undefined) it throws, naming the package to install.
#include "tower/layers/utils/plot_history.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>

#include "tower/core/error.h"
#include "tower/io/hdf5.h"
#include "tower/layers/callbacks/callback.h"

#ifdef TOWER_WITH_CAIRO
#include <cairo.h>
#endif

namespace tower::utils {

namespace {

// The quantities to draw: the given keys (checked), else "loss" then every other non-val_ key.
std::vector<std::string> panel_keys(const History& history, const PlotHistoryOptions& o) {
  std::string held;
  for (const auto& [key, values] : history.history) held += (held.empty() ? "" : ", ") + key;
  if (history.history.empty())
    raise<ValueError>("plot_history: the history is empty (fit ran no epoch); nothing to draw");
  std::vector<std::string> keys = o.keys;
  if (keys.empty()) {
    if (history.history.contains("loss")) keys.push_back("loss");
    for (const auto& [key, values] : history.history)
      if (key != "loss" && !key.starts_with("val_")) keys.push_back(key);
    if (keys.empty())  // only val_ quantities (unusual): draw those
      for (const auto& [key, values] : history.history) keys.push_back(key);
  }
  for (const auto& key : keys)
    if (!history.history.contains(key))
      raise<ValueError>("plot_history: the history has no \"{}\"; it holds: {}", key, held);
  return keys;
}

}  // namespace

#ifdef TOWER_WITH_CAIRO

namespace {

struct SurfaceDeleter {
  void operator()(cairo_surface_t* s) const { cairo_surface_destroy(s); }
};
struct ContextDeleter {
  void operator()(cairo_t* c) const { cairo_destroy(c); }
};

// Tick positions over [lo, hi]: a step of 1, 2 or 5 times a power of ten giving about `count` ticks.
std::vector<double> nice_ticks(double lo, double hi, int count) {
  const double raw = (hi - lo) / std::max(count, 1);
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = power;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * power) {
      step = m * power;
      break;
    }
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step)
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  return ticks;
}

std::string tick_text(double v) { return fmt::format("{:.4g}", v); }

struct Color {
  double r, g, b;
};
constexpr Color kTrain{0.12, 0.47, 0.71};  // matplotlib's first two colours: blue for training,
constexpr Color kVal{1.00, 0.50, 0.05};    // orange for validation

void text_at(cairo_t* cr, const std::string& s, double x, double y, double align_x, double align_y) {
  cairo_text_extents_t e;
  cairo_text_extents(cr, s.c_str(), &e);
  cairo_move_to(cr, x - e.width * align_x - e.x_bearing, y - e.height * align_y - e.y_bearing);
  cairo_show_text(cr, s.c_str());
}

// One panel in the box (x0, y0, w, h): axes, ticks, the curves of `key` and "val_<key>", a legend.
void draw_panel(cairo_t* cr, const History& history, const std::string& key, double x0, double y0, double w,
                double h) {
  const double left = x0 + 72, right = x0 + w - 20, top = y0 + 32, bottom = y0 + h - 46;
  struct Curve {
    std::string name;
    const std::vector<double>* values;
    Color color;
  };
  std::vector<Curve> curves{{key, &history.history.at(key), kTrain}};
  const std::string val = "val_" + key;
  if (!key.starts_with("val_") && history.history.contains(val)) curves.push_back({val, &history.history.at(val), kVal});
  auto epoch_of = [&](std::size_t i) {
    return static_cast<double>(i < history.epoch.size() ? history.epoch[i] : static_cast<int>(i)) + 1.0;
  };
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo, y_lo = x_lo, y_hi = -x_lo;
  for (const auto& c : curves)
    for (std::size_t i = 0; i < c.values->size(); ++i) {
      x_lo = std::min(x_lo, epoch_of(i));
      x_hi = std::max(x_hi, epoch_of(i));
      if (!std::isfinite((*c.values)[i])) continue;
      y_lo = std::min(y_lo, (*c.values)[i]);
      y_hi = std::max(y_hi, (*c.values)[i]);
    }
  if (!std::isfinite(x_lo)) x_lo = x_hi = 1;
  if (!std::isfinite(y_lo)) y_lo = 0, y_hi = 1;  // nothing finite to draw: empty axes
  if (x_hi - x_lo < 1) x_lo -= 0.5, x_hi += 0.5;
  const double x_pad = (x_hi - x_lo) * 0.03;  // the first and last dots inside the frame
  x_lo -= x_pad;
  x_hi += x_pad;
  const double pad = y_hi > y_lo ? (y_hi - y_lo) * 0.08 : std::max(std::abs(y_hi) * 0.1, 0.5);
  y_lo -= pad;
  y_hi += pad;
  auto px = [&](double x) { return left + (x - x_lo) / (x_hi - x_lo) * (right - left); };
  auto py = [&](double y) { return bottom - (y - y_lo) / (y_hi - y_lo) * (bottom - top); };

  // Title, grid and ticks, the frame.
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_set_font_size(cr, 15);
  text_at(cr, key, (left + right) / 2, y0 + 14, 0.5, 0.5);
  cairo_set_font_size(cr, 11);
  cairo_set_line_width(cr, 1);
  for (double t : nice_ticks(y_lo, y_hi, 5)) {
    cairo_set_source_rgb(cr, 0.9, 0.9, 0.9);
    cairo_move_to(cr, left, std::round(py(t)) + 0.5);
    cairo_line_to(cr, right, std::round(py(t)) + 0.5);
    cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0, 0, 0);
    text_at(cr, tick_text(t), left - 6, py(t), 1.0, 0.5);
  }
  std::vector<double> x_ticks = nice_ticks(x_lo, x_hi, 8);
  for (double t : x_ticks) {
    if (std::abs(t - std::round(t)) > 1e-9) continue;  // whole epochs only
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_move_to(cr, std::round(px(t)) + 0.5, bottom);
    cairo_line_to(cr, std::round(px(t)) + 0.5, bottom + 4);
    cairo_stroke(cr);
    text_at(cr, tick_text(t), px(t), bottom + 12, 0.5, 0.5);
  }
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_rectangle(cr, std::round(left) + 0.5, std::round(top) + 0.5, std::round(right - left),
                  std::round(bottom - top));
  cairo_stroke(cr);
  text_at(cr, "epoch", (left + right) / 2, bottom + 32, 0.5, 0.5);
  cairo_save(cr);
  cairo_translate(cr, x0 + 14, (top + bottom) / 2);
  cairo_rotate(cr, -M_PI / 2);
  text_at(cr, key, 0, 0, 0.5, 0.5);
  cairo_restore(cr);

  // The curves (a non-finite value breaks the line) with a dot at each epoch, clipped to the frame.
  cairo_save(cr);
  cairo_rectangle(cr, left, top, right - left, bottom - top);
  cairo_clip(cr);
  cairo_set_line_width(cr, 2);
  for (const auto& c : curves) {
    cairo_set_source_rgb(cr, c.color.r, c.color.g, c.color.b);
    bool drawing = false;
    for (std::size_t i = 0; i < c.values->size(); ++i) {
      const double v = (*c.values)[i];
      if (!std::isfinite(v)) {
        drawing = false;
        continue;
      }
      if (drawing) cairo_line_to(cr, px(epoch_of(i)), py(v));
      else cairo_move_to(cr, px(epoch_of(i)), py(v));
      drawing = true;
    }
    cairo_stroke(cr);
    for (std::size_t i = 0; i < c.values->size(); ++i) {
      if (!std::isfinite((*c.values)[i])) continue;
      cairo_arc(cr, px(epoch_of(i)), py((*c.values)[i]), 3, 0, 2 * M_PI);
      cairo_fill(cr);
    }
  }
  cairo_restore(cr);

  // The legend in the top right corner of the frame.
  double legend_w = 0;
  for (const auto& c : curves) {
    cairo_text_extents_t e;
    cairo_text_extents(cr, c.name.c_str(), &e);
    legend_w = std::max(legend_w, e.x_advance);
  }
  legend_w += 40;
  const double row = 18, legend_h = row * static_cast<double>(curves.size()) + 8;
  // In the corner the curves cross least (top right first).
  double lx = right - legend_w - 8, ly = top + 8;
  std::size_t fewest = std::numeric_limits<std::size_t>::max();
  for (const auto& [cx, cy] : {std::pair{right - legend_w - 8, top + 8}, std::pair{right - legend_w - 8, bottom - legend_h - 8},
                               std::pair{left + 8, top + 8}, std::pair{left + 8, bottom - legend_h - 8}}) {
    std::size_t inside = 0;
    for (const auto& c : curves)
      for (std::size_t i = 0; i < c.values->size(); ++i) {
        const double x = px(epoch_of(i)), y = py((*c.values)[i]);
        if (x >= cx - 6 && x <= cx + legend_w + 6 && y >= cy - 6 && y <= cy + legend_h + 6) ++inside;
      }
    if (inside < fewest) fewest = inside, lx = cx, ly = cy;
  }
  cairo_set_source_rgba(cr, 1, 1, 1, 0.85);
  cairo_rectangle(cr, lx, ly, legend_w, legend_h);
  cairo_fill_preserve(cr);
  cairo_set_source_rgb(cr, 0.6, 0.6, 0.6);
  cairo_set_line_width(cr, 1);
  cairo_stroke(cr);
  for (std::size_t i = 0; i < curves.size(); ++i) {
    const double cy = ly + 4 + row * (static_cast<double>(i) + 0.5);
    cairo_set_source_rgb(cr, curves[i].color.r, curves[i].color.g, curves[i].color.b);
    cairo_set_line_width(cr, 2);
    cairo_move_to(cr, lx + 6, cy);
    cairo_line_to(cr, lx + 30, cy);
    cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0, 0, 0);
    text_at(cr, curves[i].name, lx + 36, cy, 0.0, 0.5);
  }
}

}  // namespace

bool plot_history_available() { return true; }

void plot_history(const History& history, const std::string& path, const PlotHistoryOptions& options) {
  const std::vector<std::string> keys = panel_keys(history, options);
  const int panels = static_cast<int>(keys.size());
  const int title_h = options.title.empty() ? 0 : 30;
  const int width = options.width, height = options.height ? options.height : 300 * panels + title_h;
  if (width < 64 || width > 8192 || height < 64 || height > 8192 || (height - title_h) / panels < 120)
    raise<ValueError>("plot_history: the image must be 64 to 8192 pixels wide and high with at least 120 pixels "
                      "per panel; got {} x {} for {} panel(s)", width, height, panels);
  std::unique_ptr<cairo_surface_t, SurfaceDeleter> surface(cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height));
  if (cairo_surface_status(surface.get()) != CAIRO_STATUS_SUCCESS)
    raise<Error>("plot_history: cairo cannot make a {} x {} image: {}", width, height,
                 cairo_status_to_string(cairo_surface_status(surface.get())));
  std::unique_ptr<cairo_t, ContextDeleter> context(cairo_create(surface.get()));
  cairo_t* cr = context.get();
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  if (title_h) {
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_set_font_size(cr, 17);
    text_at(cr, options.title, width / 2.0, title_h / 2.0 + 2, 0.5, 0.5);
  }
  const double panel_h = static_cast<double>(height - title_h) / panels;
  for (int i = 0; i < panels; ++i)
    draw_panel(cr, history, keys[static_cast<std::size_t>(i)], 0, title_h + panel_h * i, width, panel_h);
  cairo_surface_flush(surface.get());
  if (cairo_status(cr) != CAIRO_STATUS_SUCCESS)
    raise<Error>("plot_history: drawing failed: {}", cairo_status_to_string(cairo_status(cr)));
  // Through a symbolic link to the file it names; never over a FIFO or a device (save_target).
  const std::string target = io::hdf5::save_target(path, "plot_history(\"" + path + "\")");
  const std::string tmp = target + ".tower-tmp";
  const cairo_status_t status = cairo_surface_write_to_png(surface.get(), tmp.c_str());
  if (status != CAIRO_STATUS_SUCCESS) {
    std::remove(tmp.c_str());
    raise<Error>("plot_history: cannot write \"{}\": {}", path, cairo_status_to_string(status));
  }
  if (std::rename(tmp.c_str(), target.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    raise<Error>("plot_history: cannot write \"{}\": {}", path, std::strerror(err));
  }
}

#else  // no cairo

bool plot_history_available() { return false; }

void plot_history(const History& history, const std::string& path, const PlotHistoryOptions& options) {
  panel_keys(history, options);  // the same argument errors as a build with cairo
  raise<Error>("plot_history: this tower was built without cairo, so it cannot draw \"{}\"; install libcairo2-dev "
               "(Debian/Ubuntu; or run scripts/install_deps.sh) and rebuild tower", path);
}

#endif

}  // namespace tower::utils
