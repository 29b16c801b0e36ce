#include "server/peer.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <charconv>
#include <filesystem>
#include <string>

namespace plumb::server {

namespace {

// The numeric address and port of a socket address, as httplib reports them for a request.
bool address_of(const sockaddr_storage& address, std::string& ip, int& port) {
  char text[INET6_ADDRSTRLEN] = {};
  if (address.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(address);
    port = ntohs(v4.sin_port);
    return inet_ntop(AF_INET, &v4.sin_addr, text, sizeof(text)) && (ip = text, true);
  }
  if (address.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(address);
    port = ntohs(v6.sin6_port);
    return inet_ntop(AF_INET6, &v6.sin6_addr, text, sizeof(text)) && (ip = text, true);
  }
  return false;
}

bool matches(int fd, const httplib::Request& req) {
  sockaddr_storage peer{}, local{};
  socklen_t peer_size = sizeof(peer), local_size = sizeof(local);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_size) != 0) return false;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_size) != 0) return false;
  std::string peer_ip, local_ip;
  int peer_port = -1, local_port = -1;
  return address_of(peer, peer_ip, peer_port) && address_of(local, local_ip, local_port) &&
         peer_port == req.remote_port && local_port == req.local_port && peer_ip == req.remote_addr &&
         local_ip == req.local_addr;
}

}  // namespace

PeerWatch::PeerWatch(const httplib::Request& req) {
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", error)) {
    int fd = -1;
    const std::string name = entry.path().filename().string();
    const auto [end, problem] = std::from_chars(name.data(), name.data() + name.size(), fd);
    if (problem == std::errc() && end == name.data() + name.size() && matches(fd, req)) {
      socket_ = fd;
      return;
    }
  }
}

bool PeerWatch::gone() const {
  if (!socket_) return false;
  pollfd watched{*socket_, POLLIN, 0};
  if (poll(&watched, 1, 0) <= 0) return false;
  if (watched.revents & (POLLERR | POLLHUP | POLLNVAL)) return true;
  char byte = 0;
  // Readable with nothing to read is the end of the stream; pipelined bytes mean the client is still there.
  return recv(*socket_, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

}  // namespace plumb::server
