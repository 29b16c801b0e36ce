#pragma once
// Bounded caches keyed in a std::map drop the entry whose value was used least recently: each value holds a
// `last_use` stamp from a counter the cache advances on every use.
#include <algorithm>

namespace plumb {

// The entry with the smallest `last_use`, or end() when the map is empty.
template <class Map>
auto least_recent(Map& map) {
  return std::min_element(map.begin(), map.end(),
                          [](const auto& a, const auto& b) { return a.second.last_use < b.second.last_use; });
}

}  // namespace plumb
