package engine

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// rawIO reads and writes a TCP connection with raw system calls: the goroutine keeps its
// processor (P) through the call instead of entering the runtime's syscall state. The socket is
// non-blocking, so no call blocks: a read with nothing to read answers EAGAIN and the goroutine
// waits in the netpoller, deadlines included, exactly as net.Conn's Read would.
//
// It matters under load. The runtime's monitor hands the P of a goroutine seen in a system call
// on two of its ticks (20 µs apart) to another thread. A generator sharing a busy core spends
// most of its time in system calls that its own threads' wake-ups stretch past a tick: measured
// at 64 VUs on one core, the monitor woke 3,400 times a second and the work ping-ponged between
// two threads 5,500 times a second, a fifth of the CPU spent switching. With raw calls one
// thread does the work, the monitor backs off to about 100 wake-ups a second, and the CPU per
// request fell by 10–20% (`make bench`).
type rawIO struct {
	conn        *net.TCPConn
	rc          syscall.RawConn
	read, write rawCall // apart: one goroutine may read while another writes, as HTTP/2's do
}

// rawCall is a read or a write in flight: its buffer, what it answered, and the function the
// netpoller calls to make it, bound once (a closure per call would allocate).
type rawCall struct {
	buf   []byte
	n     int
	errno syscall.Errno
	fn    func(fd uintptr) bool
}

// newRawIO returns c's raw reader and writer, or nil when c is not a TCP connection.
func newRawIO(c net.Conn) io.ReadWriter {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	r := &rawIO{conn: tc, rc: rc}
	r.read.fn = func(fd uintptr) bool { return r.read.call(syscall.SYS_READ, fd) }
	r.write.fn = func(fd uintptr) bool { return r.write.call(syscall.SYS_WRITE, fd) }
	return r
}

// call makes one read or write of c.buf on fd, and says whether it is done (false: EAGAIN,
// wait for the socket).
func (c *rawCall) call(trap, fd uintptr) bool {
	for {
		n, _, errno := syscall.RawSyscall(trap, fd, uintptr(unsafe.Pointer(&c.buf[0])), uintptr(len(c.buf)))
		switch errno {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		case 0:
			c.n, c.errno = int(n), 0
		default:
			c.n, c.errno = 0, errno
		}
		return true
	}
}

func (r *rawIO) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	c := &r.read
	c.buf = b
	err := r.rc.Read(c.fn)
	c.buf = nil
	switch {
	case err != nil:
		return 0, r.opError("read", err)
	case c.errno != 0:
		return 0, r.opError("read", os.NewSyscallError("read", c.errno))
	case c.n == 0:
		return 0, io.EOF
	}
	return c.n, nil
}

func (r *rawIO) Write(b []byte) (n int, err error) {
	c := &r.write
	for n < len(b) {
		c.buf = b[n:]
		err := r.rc.Write(c.fn)
		c.buf = nil
		switch {
		case err != nil:
			return n, r.opError("write", err)
		case c.errno != 0:
			return n, r.opError("write", os.NewSyscallError("write", c.errno))
		}
		n += c.n
	}
	return n, nil
}

// opError words err as net.Conn's Read and Write do: "read tcp a->b: i/o timeout".
func (r *rawIO) opError(op string, err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) { // from the netpoller, as "raw-read" or "raw-write"
		err = oe.Err
	}
	return &net.OpError{Op: op, Net: "tcp", Source: r.conn.LocalAddr(), Addr: r.conn.RemoteAddr(), Err: err}
}
