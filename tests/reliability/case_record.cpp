// SPDX-License-Identifier: GPL-3.0-or-later
#include "case_record.hpp"

#include <boost/json.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace pw::reliability {

void record_case(const std::string& file, const std::string& area, const std::string& name,
                 const std::string& outcome) {
  const char* dir = std::getenv("PW_RELIABILITY_RESULTS");
  if (dir == nullptr || *dir == '\0') return;
  std::filesystem::create_directories(dir);
  std::ofstream out(std::filesystem::path(dir) / (file + ".jsonl"), std::ios::app);
  out << boost::json::serialize(boost::json::object{{"area", area}, {"case", name}, {"outcome", outcome}}) << "\n";
}

}  // namespace pw::reliability
