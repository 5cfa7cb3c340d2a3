package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// KubeconfigContext is the name of the cluster, user and context in the
// kubeconfig files a sandbox writes.
const KubeconfigContext = "hubspoke-sandbox"

// Kubeconfig returns an admin kubeconfig for the sandbox: its URL and CA,
// the client certificate of AdminUser (group system:masters), namespace
// default.
func (s *Sandbox) Kubeconfig() ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[KubeconfigContext] = &clientcmdapi.Cluster{
		Server:                   s.restConfig.Host,
		CertificateAuthorityData: s.restConfig.CAData,
	}
	cfg.AuthInfos[KubeconfigContext] = &clientcmdapi.AuthInfo{
		ClientCertificateData: s.restConfig.CertData,
		ClientKeyData:         s.restConfig.KeyData,
	}
	cfg.Contexts[KubeconfigContext] = &clientcmdapi.Context{
		Cluster:   KubeconfigContext,
		AuthInfo:  KubeconfigContext,
		Namespace: "default",
	}
	cfg.CurrentContext = KubeconfigContext
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("sandbox: encode kubeconfig: %w", err)
	}
	return data, nil
}

// WriteKubeconfig writes the sandbox's kubeconfig to path (mode 0600),
// replacing any file there. The caller removes it; Stop does not.
func (s *Sandbox) WriteKubeconfig(path string) error {
	data, err := s.Kubeconfig()
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".kubeconfig-*")
	if err != nil {
		return fmt.Errorf("sandbox: write kubeconfig: %w", err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("sandbox: write kubeconfig %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("sandbox: write kubeconfig: %w", err)
	}
	return nil
}

// KubeconfigPath returns the path of the kubeconfig New wrote in the data
// directory; Stop removes it with the directory.
func (s *Sandbox) KubeconfigPath() string {
	return filepath.Join(s.dataDir, "kubeconfig")
}
