// Package control is the local protocol between the browseragent shell
// commands and a background session: a Server serves one agent.Driver on a
// Unix socket (or, on Windows, loopback TCP with a token: Transport), a
// Client sends it one request at a time, and a Dir is the per-user
// directory the sockets live in.
//
// # Wire format
//
// One request per connection: the client connects, writes one JSON object
// on one line (at most MaxRequestBytes), and reads one JSON object on one
// line back; then both sides close. Every Driver action is reachable: a
// Request names an Op ("do" with an action name and its JSON parameters,
// "state", "text", "tabs", "actions", "screenshot", "info", "close").
// While it waits for its answer the client keeps its side of the
// connection open: a client that hangs up cancels its request.
//
// Each request and response carries the protocol Version ("v"). A server
// answers a request of another version with the code CodeVersion and does
// nothing, except for "info" and "close", which every version understands,
// so that a newer build can always list and stop an older session.
//
// # Files
//
// A Dir holds, per session NAME: NAME.sock (the socket, mode 0600),
// NAME.lock (held with flock by the live server process for its whole
// life, so a dead one is told from a live one without trusting pids), and
// NAME.json (Meta: pid, files, and, once the session ended for another
// reason than close, why). The directory itself must be the caller's own
// with mode 0700; OpenDir refuses anything else.
//
// With TransportTCP (Windows; elsewhere when TransportEnv says tcp),
// NAME.tcp (mode 0600) replaces NAME.sock: the server's loopback address
// and a random 256-bit token. A client writes the token on a line of its
// own before its request; the server refuses a connection whose first
// line is not the token (constant-time compare) with CodeRefused. On
// Windows the lock is NAME.lock held open without sharing instead of
// flock, and the directory's access list is not checked (see OpenDir).
package control
