package sandbox

import (
	"context"
	"fmt"
	"net/url"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// startEtcd starts a single-member etcd in dir on loopback with random ports
// and waits until it serves. It is tuned for tests: no fsync, fast ticks, no
// metrics listener.
func startEtcd(ctx context.Context, dir string) (*embed.Etcd, error) {
	cfg := embed.NewConfig()
	cfg.Dir = dir
	cfg.UnsafeNoFsync = true
	cfg.TickMs = 10
	cfg.ElectionMs = 100
	loopback := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	cfg.ListenClientUrls = []url.URL{loopback}
	cfg.AdvertiseClientUrls = []url.URL{loopback}
	cfg.ListenPeerUrls = []url.URL{loopback}
	cfg.AdvertisePeerUrls = []url.URL{loopback}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ListenMetricsUrls = nil
	cfg.Logger = "zap"
	// etcd's logs say nothing a sandbox user can act on; failures surface
	// as errors from StartEtcd or from the API server.
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("sandbox: start etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("sandbox: etcd: %w", err)
	case <-ctx.Done():
		e.Close()
		return nil, fmt.Errorf("sandbox: etcd not ready: %w", ctx.Err())
	}
}
