package redistest

import (
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Server is a private redis-server process that a test may kill, restart
// and freeze, for outages: never the shared server other test packages use.
// It keeps nothing on disk, so a restart loses every key, the hardest case
// for anything that relies on Redis.
type Server struct {
	t    testing.TB
	path string
	port int

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// StartServer starts redis-server on a free port of 127.0.0.1 and kills it
// at cleanup. It skips t when redis-server is not installed.
func StartServer(t testing.TB) *Server {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	s := &Server{t: t, path: path, port: port}
	s.Start()
	t.Cleanup(s.Kill)
	return s
}

// URL is the server's database 0.
func (s *Server) URL() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", s.port) }

// Start starts the server (again, on the same port) and waits until it
// accepts connections.
func (s *Server) Start() {
	s.t.Helper()
	cmd := exec.Command(s.path, "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "no")
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("redistest: starting redis-server: %v", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", s.port), 100*time.Millisecond)
		if err == nil {
			_ = conn.Close()
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redistest: redis-server on port %d did not start: %v", s.port, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Kill stops the server at once, as a crash does, and waits until it is
// gone. A server already gone is left alone.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// Restart kills the server and starts it again, empty, after down.
func (s *Server) Restart(down time.Duration) {
	s.t.Helper()
	s.Kill()
	time.Sleep(down)
	s.Start()
}

// Freeze stops the process (SIGSTOP), as a hung Redis or a stalled network
// path: connections stay open and nothing is answered until Thaw.
func (s *Server) Freeze() { s.signal(syscall.SIGSTOP) }

// Thaw lets a frozen server go on, with everything it had.
func (s *Server) Thaw() { s.signal(syscall.SIGCONT) }

// Pause freezes the server for d.
func (s *Server) Pause(d time.Duration) {
	s.Freeze()
	time.Sleep(d)
	s.Thaw()
}

func (s *Server) signal(sig syscall.Signal) {
	s.t.Helper()
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if err := cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("redistest: signalling redis-server: %v", err)
	}
}
