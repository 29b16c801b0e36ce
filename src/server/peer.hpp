#pragma once
// Notices that the client of a request being answered has gone away, for replies that send nothing until they
// are whole. The request's connection is found by its address pair among this process's sockets (a TCP
// connection's addresses are unique, and its socket stays open while its handler runs); a gone client shows
// as end-of-stream or an error on it.
#include <optional>

#include <httplib.h>

namespace plumb::server {

class PeerWatch {
 public:
  explicit PeerWatch(const httplib::Request& req);
  // True once the client has closed or reset the connection; false while it is open or when it was not found.
  bool gone() const;

 private:
  std::optional<int> socket_;
};

}  // namespace plumb::server
