#include "progress.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <thread>

#include "diagnostics/stop_signals_blocked.hpp"
#include "logging.hpp"
#include "report/run_report.hpp"

namespace pw::cli {
namespace {

// Redraws one status line four times a second until the next event replaces it; log lines go
// above it (TerminalLine, logging.hpp).
class ProgressLine final : public TerminalLine {
 public:
  ProgressLine() : ticker_(thread_without_stop_signals([this] { tick(); })) { set_terminal_line(this); }
  ~ProgressLine() override {
    set_terminal_line(nullptr);
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    ticker_.join();
    clear();
  }

  // Held from hide() to restore(): the ticker and show() wait meanwhile.
  void hide() override {
    mu_.lock();
    if (active_) clear();
  }
  void restore() override {
    if (active_) draw_locked();
    mu_.unlock();
  }

  void show(const reconcile::ProgressEvent& e) {
    std::lock_guard lock(mu_);
    event_ = e;
    since_ = std::chrono::steady_clock::now();
    active_ = true;
    draw_locked();
  }

 private:
  void tick() {
    std::unique_lock lock(mu_);
    while (!cv_.wait_for(lock, std::chrono::milliseconds(250), [this] { return stop_; })) {
      if (active_) draw_locked();
    }
  }

  void draw_locked() {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - since_).count();
    char line[256];
    if (event_.what == "probe" && event_.total > 0) {
      // The probe runs inside the guest: its rate is not visible until it ends, so the ETA uses a
      // conservative 40 MB/s (the slowest software-emulated link the lab measures).
      const double rate = 40e6;
      const double eta = static_cast<double>(event_.total) / rate - elapsed;
      std::snprintf(line, sizeof line, "\r\033[K%s: %s (%s, elapsed %.0fs, ETA ~%.0fs)", event_.policy.c_str(),
                    event_.detail.c_str(), report::human_bytes(event_.total).c_str(), elapsed, eta > 0 ? eta : 0.0);
    } else {
      std::snprintf(line, sizeof line, "\r\033[K%s%s%s (elapsed %.0fs)", event_.policy.c_str(),
                    event_.policy.empty() ? "" : ": ", event_.detail.c_str(), elapsed);
    }
    std::fputs(line, stderr);
    std::fflush(stderr);
  }

  void clear() {
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
  }

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool active_ = false;
  reconcile::ProgressEvent event_;
  std::chrono::steady_clock::time_point since_;
  std::thread ticker_;
};

}  // namespace

reconcile::ProgressSink progress_sink(bool text_output) {
  if (!text_output || isatty(STDERR_FILENO) == 0) return {};
  auto line = std::make_shared<ProgressLine>();
  return [line](const reconcile::ProgressEvent& e) { line->show(e); };
}

}  // namespace pw::cli
