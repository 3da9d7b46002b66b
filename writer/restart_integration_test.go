package writer_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/storetest/testkit"
	"github.com/safeput/safeput/writer"
)

// privateServer is a test server of this test's own (its own port and data directory), started
// from the binary the test command installed (bin/, scripts/s3server.sh), which the test may kill
// and start again without touching the servers other tests share.
type privateServer struct {
	t    *testing.T
	name string
	bin  string
	dir  string
	srv  s3test.Server

	mu  sync.Mutex
	cmd *exec.Cmd
	log *os.File
}

// binDir finds the repository's bin/ by walking up from the package directory to go.work.
func binDir(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return filepath.Join(dir, "bin")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.work above the package directory")
		}
		dir = parent
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().(*net.TCPAddr).Port
}

// startPrivate starts a private server of kind name (s3test.MinIO or s3test.VersityGW) and stops
// it when the test ends.
func startPrivate(t *testing.T, name string) *privateServer {
	t.Helper()
	bin := filepath.Join(binDir(t), name)
	if _, err := os.Stat(bin); err != nil {
		// The test command installs it with the shared servers (scripts/s3server.sh).
		t.Fatalf("%s: no %s binary to start a private server from: %v", name, name, err)
	}
	p := &privateServer{t: t, name: name, bin: bin, dir: t.TempDir()}
	p.srv = s3test.Server{Name: name, Endpoint: fmt.Sprintf("http://127.0.0.1:%d", freePort(t)), Region: "us-east-1",
		AccessKey: fmt.Sprintf("private%d", time.Now().UnixNano()%1e9), SecretKey: "private-secret-" + s3test.BucketName("k")}
	t.Cleanup(p.kill)
	p.start()
	return p
}

// start starts the server on its port and data directory and waits until it serves requests.
func (p *privateServer) start() {
	p.t.Helper()
	port := p.srv.Endpoint[len("http://127.0.0.1:"):]
	var cmd *exec.Cmd
	var ready func() bool
	switch p.name {
	case s3test.MinIO:
		cmd = exec.Command(p.bin, "server", "--quiet", "--anonymous", "--address", "127.0.0.1:"+port,
			"--console-address", fmt.Sprintf("127.0.0.1:%d", freePort(p.t)), filepath.Join(p.dir, "drive"))
		cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+p.srv.AccessKey, "MINIO_ROOT_PASSWORD="+p.srv.SecretKey,
			"MINIO_SITE_REGION="+p.srv.Region, "MINIO_BROWSER=off", "MINIO_UPDATE=off", "MINIO_CALLHOME_ENABLE=off")
		ready = func() bool { // the object layer is up, not just the listener
			resp, err := http.Get(p.srv.Endpoint + "/minio/health/ready")
			if err != nil {
				return false
			}
			_ = resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		}
	case s3test.VersityGW:
		if err := os.MkdirAll(filepath.Join(p.dir, "objects"), 0o700); err != nil {
			p.t.Fatal(err)
		}
		cmd = exec.Command(p.bin, "--access", p.srv.AccessKey, "--secret", p.srv.SecretKey, "--region", p.srv.Region,
			"--port", "127.0.0.1:"+port, "--keep-alive", "--quiet", "posix", filepath.Join(p.dir, "objects"))
		ready = func() bool {
			c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second)
			if err != nil {
				return false
			}
			_ = c.Close()
			return true
		}
	default:
		p.t.Fatalf("no private %s", p.name)
	}
	log, err := os.OpenFile(filepath.Join(p.dir, p.name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		p.t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		p.t.Fatalf("start %s: %v", p.name, err)
	}
	p.mu.Lock()
	p.cmd, p.log = cmd, log
	p.mu.Unlock()
	for deadline := time.Now().Add(60 * time.Second); !ready(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(filepath.Join(p.dir, p.name+".log"))
			p.t.Fatalf("%s did not become ready: %s", p.name, out)
		}
	}
}

// kill ends the server at once (SIGKILL: no clean shutdown), as a crash or a pod kill does.
func (p *privateServer) kill() {
	p.mu.Lock()
	cmd, log := p.cmd, p.log
	p.cmd, p.log = nil, nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	_ = log.Close()
}

// restartServers are the test servers that keep a multipart upload across a restart: MinIO (its
// drive) and Versity's gateway (its posix directory). Ceph RGW is not restarted: a cluster, not
// one process.
var restartServers = []string{s3test.MinIO, s3test.VersityGW}

// TestRealServerRestartMidWrite: a private MinIO and a private Versity gateway are killed
// (SIGKILL) right after the write's first part landed and started again a moment later, through
// both adapters, at the defaults: the write rides it out with its upload and lands verified, the
// object read back equal, no upload left. Only the servers the run has (SAFEPUT_S3_MATRIX) are
// restarted.
func TestRealServerRestartMidWrite(t *testing.T) {
	var names []string
	for _, s := range s3test.Servers(t) {
		if slices.Contains(restartServers, s.Name) {
			names = append(names, s.Name)
		}
	}
	if len(names) == 0 {
		t.Skip("no server of the run keeps its uploads across a restart")
	}
	data := s3test.RandomBytes(4*part + 1)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := startPrivate(t, name)
			bucket := s3test.BucketName(t.Name())
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := p.srv.RawClient().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
				t.Fatal(err)
			}
			env := testkit.Env{Srv: p.srv, Server: name}
			for _, a := range testkit.Adapters {
				st, err := a.New(p.srv)
				if err != nil {
					t.Fatal(err)
				}
				key := "restart/" + a.Name
				var once sync.Once
				restarted := make(chan struct{})
				restart := func(e writer.Event) {
					if e.Type != writer.EventPartDone || e.PartNumber != 1 {
						return
					}
					once.Do(func() {
						go func() {
							defer close(restarted)
							p.kill()
							time.Sleep(2 * time.Second)
							p.start()
						}()
					})
				}
				start := time.Now()
				res, err := writer.Upload(context.Background(), st, bucket, key, fileOf(t, data),
					testOpts(env, func(o *writer.Options) { o.Observer = restart; o.Concurrency = 2 })...)
				took := time.Since(start)
				select {
				case <-restarted:
				case <-time.After(2 * time.Minute):
					t.Fatal("the server was not restarted")
				}
				t.Logf("%s through %s: %v after %v (failures %v)", name, a.Name, err, took, failures(res))
				if err != nil {
					t.Fatalf("%s: the write did not ride out the restart: %v", a.Name, err)
				}
				if res.Failures[sperrors.Transient] == 0 || res.UploadAttempts != 1 {
					t.Fatalf("%s: failures %v, upload attempts %d: want the restart met and ridden out with the same upload", a.Name, res.Failures, res.UploadAttempts)
				}
				if got := s3test.ReadAll(t, p.srv, bucket, key); !bytes.Equal(got, data) {
					t.Fatalf("%s: read back %d bytes, not the %d written", a.Name, len(got), len(data))
				}
				if ups := s3test.IncompleteUploads(t, p.srv, bucket, key); len(ups) != 0 {
					t.Fatalf("%s: incomplete uploads left: %v", a.Name, ups)
				}
			}
		})
	}
}
