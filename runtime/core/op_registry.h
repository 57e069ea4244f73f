// The kernel registries of the backends (runtime/cpu/registry.h, runtime/device/device_registry.h)
// are vectors of entries with a qualified `op` ("Add", "a8.ReluGrad"): sorted once when built,
// then looked up by binary search.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <iterator>
#include <string>
#include <vector>

namespace a8 {

template <typename Entry>
void SortByOp(std::vector<Entry>* entries) {
  std::sort(entries->begin(), entries->end(),
            [](const Entry& a, const Entry& b) { return a.op < b.op; });
}

// A registry built once: the entries of every family (each function returns its ops_*.cc file's
// table), sorted by SortByOp. Never freed (it lives as long as the process; no destructor runs
// at exit).
template <typename Entry>
const std::vector<Entry>* SortedRegistry(std::initializer_list<std::vector<Entry> (*)()> families) {
  auto* r = new std::vector<Entry>();
  for (auto* family : families) {
    std::vector<Entry> entries = family();
    r->insert(r->end(), std::make_move_iterator(entries.begin()),
              std::make_move_iterator(entries.end()));
  }
  SortByOp(r);
  return r;
}

// The entry of `op` in entries sorted by SortByOp; null when there is none.
template <typename Entry>
const Entry* FindByOp(const std::vector<Entry>& entries, const std::string& op) {
  auto it = std::lower_bound(entries.begin(), entries.end(), op,
                             [](const Entry& e, const std::string& o) { return e.op < o; });
  return it != entries.end() && it->op == op ? &*it : nullptr;
}

}  // namespace a8
