package s3test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Every server the test command starts must accept a bucket and an object and give it back.
func TestServerRoundTrip(t *testing.T) {
	ForEach(t, func(t *testing.T, s Server) {
		bucket := NewBucket(t, s)
		data := RandomBytes(1000)
		_, err := s.RawClient().PutObject(context.Background(), &s3.PutObjectInput{
			Bucket: aws.String(bucket), Key: aws.String("k"), Body: bytes.NewReader(data),
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := ReadAll(t, s, bucket, "k"); !bytes.Equal(got, data) {
			t.Fatalf("read back %d bytes, want %d identical", len(got), len(data))
		}
		if !Exists(t, s, bucket, "k") || Exists(t, s, bucket, "missing") {
			t.Fatal("Exists disagrees with the store")
		}
	})
}

func setServerEnv(t *testing.T, prefix, endpoint string) {
	t.Setenv(prefix+"ENDPOINT", endpoint)
	t.Setenv(prefix+"ACCESS_KEY", "ak-"+endpoint)
	t.Setenv(prefix+"SECRET_KEY", "sk-"+endpoint)
	t.Setenv(prefix+"REGION", "")
}

func names(list []Server) []string {
	var out []string
	for _, s := range list {
		out = append(out, s.Name+"="+s.Endpoint)
	}
	return out
}

// The environment the script exports gives every server; a user's own SAFEPUT_S3_ENDPOINT wins
// over a stale list; nothing configured gives nothing.
func TestLookupAll(t *testing.T) {
	t.Run("script", func(t *testing.T) {
		setServerEnv(t, "SAFEPUT_S3_", "http://gw")
		setServerEnv(t, "SAFEPUT_S3_VERSITYGW_", "http://gw")
		setServerEnv(t, "SAFEPUT_S3_MINIO_", "http://mc")
		setServerEnv(t, "SAFEPUT_S3_CEPH_RGW_", "http://rgw")
		t.Setenv("SAFEPUT_S3_SERVERS", "versitygw, minio,ceph-rgw")
		got := LookupAll()
		want := []string{"versitygw=http://gw", "minio=http://mc", "ceph-rgw=http://rgw"}
		if len(got) != 3 || names(got)[0] != want[0] || names(got)[1] != want[1] || names(got)[2] != want[2] {
			t.Fatalf("LookupAll = %v, want %v", names(got), want)
		}
		if got[1].AccessKey != "ak-http://mc" || got[1].SecretKey != "sk-http://mc" || got[1].Region != "us-east-1" {
			t.Fatalf("minio server = %+v", got[1])
		}
		if first, ok := Lookup(); !ok || first.Name != VersityGW {
			t.Fatalf("Lookup = %+v, %v; want the first server", first, ok)
		}
	})
	t.Run("matrix narrowed", func(t *testing.T) {
		setServerEnv(t, "SAFEPUT_S3_", "http://gw")
		setServerEnv(t, "SAFEPUT_S3_VERSITYGW_", "http://gw")
		setServerEnv(t, "SAFEPUT_S3_MINIO_", "http://mc")
		setServerEnv(t, "SAFEPUT_S3_CEPH_", "http://rgw")
		t.Setenv("SAFEPUT_S3_SERVERS", "versitygw,minio,ceph")
		t.Setenv("SAFEPUT_S3_MATRIX", "ceph, minio")
		if got := names(Servers(t)); len(got) != 2 || got[0] != "ceph=http://rgw" || got[1] != "minio=http://mc" {
			t.Fatalf("Servers = %v, want ceph and minio", got)
		}
		if s := Require(t); s.Name != VersityGW {
			t.Fatalf("Require = %s, want the first configured server whatever the matrix", s.Name)
		}
	})
	t.Run("external endpoint over a stale list", func(t *testing.T) {
		setServerEnv(t, "SAFEPUT_S3_", "http://mine")
		setServerEnv(t, "SAFEPUT_S3_VERSITYGW_", "http://gw")
		t.Setenv("SAFEPUT_S3_SERVERS", "versitygw")
		if got := names(LookupAll()); len(got) != 1 || got[0] != External+"=http://mine" {
			t.Fatalf("LookupAll = %v, want only the external endpoint", got)
		}
	})
	t.Run("none", func(t *testing.T) {
		setServerEnv(t, "SAFEPUT_S3_", "")
		t.Setenv("SAFEPUT_S3_SERVERS", "")
		if got := LookupAll(); len(got) != 0 {
			t.Fatalf("LookupAll = %v, want none", names(got))
		}
		if _, ok := Lookup(); ok {
			t.Fatal("Lookup reports a server with none configured")
		}
	})
}

// A test that asks for a server is named, once per ask, by its top-level name in the file
// SAFEPUT_S3_ASKED_LOG names (what the test command checks the writer's race-free list against),
// from subtests too.
func TestAskedLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "asked")
	t.Setenv("SAFEPUT_S3_ASKED_LOG", path)
	noteAsked(t)
	t.Run("sub", func(t *testing.T) { noteAsked(t) })
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := "TestAskedLog\nTestAskedLog\n"; string(got) != want {
		t.Errorf("log %q, want %q", got, want)
	}
}
