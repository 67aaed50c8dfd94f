// SPDX-License-Identifier: GPL-3.0-or-later
#include "progress.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <thread>

#include "diagnostics/error.hpp"
#include "diagnostics/stop_signals_blocked.hpp"
#include "logging.hpp"

namespace pw::cli {
namespace {

using Clock = std::chrono::steady_clock;

// The tracker and the thread that shows it between events: on a terminal it redraws the line
// four times a second (the elapsed time moves); elsewhere it looks once a second whether a
// minute passed since the last log line.
class Progress {
 public:
  explicit Progress(bool live) : live_(live), tracker_(Clock::now()) {}
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  virtual ~Progress() = default;

  void show(const reconcile::ProgressEvent& e) {
    if (e.activity == reconcile::Activity::warning) {
      spdlog::warn("{}{}", e.policy.empty() ? "" : e.policy + ": ", e.detail);
      return;
    }
    std::lock_guard lock(mu_);
    const auto now = Clock::now();
    const bool another = tracker_.take(e, now);
    if (live_) {
      draw_locked(now);
    } else if (another) {
      log_locked(now);
    }
  }

 protected:
  void run_ticker() {
    ticker_ = thread_without_stop_signals([this] { tick(); });
  }
  void stop_ticker() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (ticker_.joinable()) ticker_.join();
  }
  virtual void draw_locked(Clock::time_point) {}
  void log_locked(Clock::time_point now) {
    // Logged without the lock's holder writing: spdlog's own lock orders the lines.
    spdlog::info("progress: {}", tracker_.line(now));
  }

  std::mutex mu_;
  bool active() const { return tracker_.started(); }

 private:
  void tick() {
    std::unique_lock lock(mu_);
    const auto every = live_ ? std::chrono::milliseconds(250) : std::chrono::milliseconds(1000);
    while (!cv_.wait_for(lock, every, [this] { return stop_; })) {
      const auto now = Clock::now();
      if (live_) {
        if (tracker_.started()) draw_locked(now);
      } else if (tracker_.minute_due(now)) {
        log_locked(now);
      }
    }
  }

  bool live_;
  reconcile::ProgressTracker tracker_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread ticker_;

 protected:
  const reconcile::ProgressTracker& tracker() const { return tracker_; }
};

// Off a terminal: log lines only.
class ProgressLog final : public Progress {
 public:
  ProgressLog() : Progress(false) { run_ticker(); }
  ~ProgressLog() override { stop_ticker(); }
};

// On a terminal: one status line; log lines go above it (TerminalLine, logging.hpp).
class ProgressLine final : public Progress, public TerminalLine {
 public:
  ProgressLine() : Progress(true) {
    set_terminal_line(this);
    run_ticker();
  }
  ~ProgressLine() override {
    set_terminal_line(nullptr);
    stop_ticker();
    clear();
  }

  // Held from hide() to restore(): the ticker and show() wait meanwhile.
  void hide() override {
    mu_.lock();
    if (active()) clear();
  }
  void restore() override {
    if (active()) draw_locked(Clock::now());
    mu_.unlock();
  }

 private:
  void draw_locked(Clock::time_point now) override {
    // The line is cut to the terminal's usual width: a wrapped line cannot be redrawn in place.
    auto text = escape_controls(tracker().line(now));
    if (text.size() > 118) {
      std::size_t cut = 115;
      while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
      text = text.substr(0, cut) + "...";
    }
    std::fputs(("\r\033[K" + text).c_str(), stderr);
    std::fflush(stderr);
  }
  static void clear() {
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
  }
};

}  // namespace

reconcile::ProgressSink progress_sink(bool text_output) {
  std::shared_ptr<Progress> shown;
  if (text_output && isatty(STDERR_FILENO) != 0 && !stderr_is_journal()) {
    shown = std::make_shared<ProgressLine>();
  } else {
    shown = std::make_shared<ProgressLog>();
  }
  return [shown](const reconcile::ProgressEvent& e) { shown->show(e); };
}

}  // namespace pw::cli
