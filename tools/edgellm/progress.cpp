#include "progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace edgellm::cli {
namespace {

constexpr int kBarWidth = 24;
constexpr auto kRedrawInterval = std::chrono::milliseconds(100);

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

ProgressDisplay::ProgressDisplay(std::string label, std::FILE* out, int interactive)
    : label_(std::move(label)),
      out_(out),
      interactive_(interactive < 0 ? ::isatty(::fileno(out)) != 0 : interactive != 0) {}

ProgressDisplay::~ProgressDisplay() {
  if (!finished_ && drawn_) clear();
}

void ProgressDisplay::draw(double fraction, const std::string& detail, bool force) {
  if (finished_) return;
  if (!std::isfinite(fraction)) fraction = 0;
  fraction = std::clamp(fraction, 0.0, 1.0);
  last_fraction_ = fraction;
  if (interactive_) {
    const auto now = std::chrono::steady_clock::now();
    if (!force && drawn_ && now - last_draw_ < kRedrawInterval && fraction < 1.0) return;
    last_draw_ = now;
    const int filled = static_cast<int>(fraction * kBarWidth);
    std::string line = "\r" + label_ + " [" + std::string(static_cast<size_t>(filled), '#') +
                       std::string(static_cast<size_t>(kBarWidth - filled), '-') + "] " + fmt("%5.1f%%", 100 * fraction);
    if (!detail.empty()) line += "  " + detail;
    line += "\033[K";  // erase what a longer earlier line left
    std::fputs(line.c_str(), out_);
    std::fflush(out_);
    drawn_ = true;
    return;
  }
  const int decile = static_cast<int>(std::floor(fraction * 10 + 1e-9));
  if (!force && decile <= last_decile_) return;
  last_decile_ = decile;
  std::fprintf(out_, "%s: %3d%%%s%s\n", label_.c_str(), decile * 10, detail.empty() ? "" : "  ", detail.c_str());
  std::fflush(out_);
}

void ProgressDisplay::update(double fraction, std::string_view what) { draw(fraction, std::string(what), false); }

void ProgressDisplay::update_bytes(uint64_t done, uint64_t total, std::string_view what) {
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double mib = static_cast<double>(done) / (1024.0 * 1024.0);
  std::string detail = fmt("%.1f MiB", mib);
  if (secs > 0) detail += fmt("  %.1f MiB/s", mib / secs);
  if (!what.empty()) detail += "  " + std::string(what);
  draw(total > 0 ? static_cast<double>(done) / static_cast<double>(total) : last_fraction_, detail, false);
}

void ProgressDisplay::clear() {
  if (interactive_ && drawn_) {
    std::fputs("\r\033[K", out_);
    std::fflush(out_);
    drawn_ = false;
  }
}

void ProgressDisplay::finish(std::string_view summary) {
  if (finished_) return;
  clear();
  finished_ = true;
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::fprintf(out_, "%s: %s%s(%.1f s)\n", label_.c_str(), std::string(summary).c_str(), summary.empty() ? "" : " ",
               secs);
  std::fflush(out_);
}

ProgressFn ProgressDisplay::callback() {
  return [this](double fraction, std::string_view what) { update(fraction, what); };
}

}  // namespace edgellm::cli
