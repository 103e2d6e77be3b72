package registry_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/barrage-load/barrage/internal/registry"
)

func TestNamesAreLowerCaseAndPlain(t *testing.T) {
	for _, ok := range []string{"acme", "random-data", "a1", "x", strings.Repeat("a", 64)} {
		require.NoError(t, registry.CheckName("name", ok), ok)
	}
	for bad, why := range map[string]string{
		"":                      "empty",
		"Acme":                  "start with a lower-case letter",
		"1acme":                 "start with a lower-case letter",
		"acme-":                 "end with a hyphen",
		"ac--me":                "two hyphens",
		"ac_me":                 "only lower-case",
		"ac.me":                 "only lower-case",
		"acmé":                  "only lower-case",
		strings.Repeat("a", 65): "longer than 64",
	} {
		require.ErrorContains(t, registry.CheckName("name", bad), why, "%q", bad)
	}
}

func TestRefsNameANamespaceAPluginAndAVersion(t *testing.T) {
	r, err := registry.ParseRef("acme/random-data@1.2.0-rc.1+linux")
	require.NoError(t, err)
	require.Equal(t, "acme", r.Namespace)
	require.Equal(t, "random-data", r.Name)
	require.Equal(t, "1.2.0-rc.1+linux", r.Version.String())
	require.Equal(t, "acme/random-data@1.2.0-rc.1+linux", r.String())
	for _, bad := range []string{"random-data@1.2.0", "acme/random-data", "acme/Random@1.0.0", "acme/x@v1.0.0", "/x@1.0.0"} {
		_, err := registry.ParseRef(bad)
		require.Error(t, err, bad)
	}
}

func TestVersionsAreSemVer2(t *testing.T) {
	for _, ok := range []string{"0.0.0", "1.2.3", "10.20.30", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-0.3.7",
		"1.0.0-x.7.z.92", "1.0.0+20130313144700", "1.0.0-beta+exp.sha.5114f85", "1.0.0-x-y-z.--"} {
		v, err := registry.ParseVersion(ok)
		require.NoError(t, err, ok)
		require.Equal(t, ok, v.String())
	}
	for _, bad := range []string{"", "1", "1.2", "v1.2.3", "01.2.3", "1.02.3", "1.2.3-", "1.2.3-01", "1.2.3+",
		"1.2.3-a..b", "1.2.3-a_b", "1.2.3.4", " 1.2.3", "1.2.3 ", "99999999999999999999.0.0", "-1.2.3"} {
		_, err := registry.ParseVersion(bad)
		require.Error(t, err, "%q", bad)
	}
}

// semver.org's example of precedence, in order.
func TestVersionsOrderBySemVerPrecedence(t *testing.T) {
	order := []string{"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2",
		"1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.1.0", "2.0.0"}
	var vs []registry.Version
	for _, s := range order {
		v, err := registry.ParseVersion(s)
		require.NoError(t, err)
		vs = append(vs, v)
	}
	shuffled := slices.Clone(vs)
	slices.Reverse(shuffled)
	slices.SortFunc(shuffled, registry.Version.Compare)
	for i := range vs {
		require.Equal(t, order[i], shuffled[i].String())
	}
	a, _ := registry.ParseVersion("1.0.0+a")
	b, _ := registry.ParseVersion("1.0.0+b")
	require.Zero(t, a.Compare(b), "build metadata does not count")
}

func TestSumsAreSignedAndVerified(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	otherPub, otherPriv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	a := strings.Repeat("ab", 32)
	b := strings.Repeat("cd", 32)
	doc, err := registry.FormatSums([]registry.Sum{{SHA256: b, Name: "rd_1.0.0_linux_arm64"}, {SHA256: a, Name: "rd_1.0.0_linux_amd64"}})
	require.NoError(t, err)
	require.Equal(t, a+"  rd_1.0.0_linux_amd64\n"+b+"  rd_1.0.0_linux_arm64\n", string(doc), "sorted by name, as sha256sum writes")
	sums, err := registry.ParseSums(doc)
	require.NoError(t, err)
	require.Len(t, sums, 2)

	sig := registry.Sign(priv, doc)
	keys := []registry.PublicKey{registry.PublicKey(otherPub), registry.PublicKey(pub)}
	signer, err := registry.Verify(keys, doc, sig)
	require.NoError(t, err)
	require.Equal(t, registry.PublicKey(pub).ID(), signer.ID())
	// A retired key still verifies what it signed: it stays among the keys offered.
	_, err = registry.Verify(keys[:1], doc, sig)
	require.ErrorIs(t, err, registry.ErrBadSignature, "not signed by the other key")
	tampered := []byte(strings.Replace(string(doc), a, b, 1))
	_, err = registry.Verify(keys, tampered, sig)
	require.ErrorIs(t, err, registry.ErrBadSignature)
	_, err = registry.Verify(keys, doc, registry.Sign(otherPriv, tampered))
	require.ErrorIs(t, err, registry.ErrBadSignature)

	for _, bad := range []string{
		a + " rd\n",                         // one space
		a + "  rd",                          // no line break
		b + "  z\n" + a + "  a\n",           // not sorted
		strings.ToUpper(a) + "  rd\n",       // upper case
		a + "  rd\n" + a + "  rd\n",         // twice
		a + "  ../rd\n",                     // a path
		strings.Repeat("ab", 31) + "  rd\n", // short
	} {
		_, err := registry.ParseSums([]byte(bad))
		require.Error(t, err, "%q", bad)
	}
}

func TestKeysRoundTrip(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	k, err := registry.ParsePublicKey(registry.PublicKey(pub).String())
	require.NoError(t, err)
	require.Equal(t, registry.PublicKey(pub), k)
	require.Len(t, k.ID(), 16)
	for _, bad := range []string{"", "ed25519:", "ed25519:AAAA", "rsa:" + strings.TrimPrefix(k.String(), "ed25519:")} {
		_, err := registry.ParsePublicKey(bad)
		require.Error(t, err, bad)
	}
	pemBytes, err := registry.MarshalPrivateKey(priv)
	require.NoError(t, err)
	back, err := registry.ParsePrivateKey(pemBytes)
	require.NoError(t, err)
	require.True(t, priv.Equal(back))
	_, err = registry.ParsePrivateKey([]byte("not a key"))
	require.Error(t, err)
}

func TestPlatformsAndArtifactNames(t *testing.T) {
	require.NoError(t, registry.CheckPlatform("linux", "arm64"))
	require.Error(t, registry.CheckPlatform("windows", "amd64"))
	require.Equal(t, "random-data_1.2.0_linux_amd64", registry.ArtifactFile("random-data", "1.2.0", "linux", "amd64"))
}

func TestADownloadVerifiesAgainstItsSignedSums(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	a, b := strings.Repeat("ab", 32), strings.Repeat("cd", 32)
	doc, err := registry.FormatSums([]registry.Sum{{SHA256: a, Name: "rd_1.0.0_linux_amd64"}, {SHA256: b, Name: "rd_1.0.0_linux_arm64"}})
	require.NoError(t, err)
	keys := []registry.PublicKey{registry.PublicKey(pub)}
	sig := registry.Sign(priv, doc)
	_, err = registry.VerifyDownload(keys, doc, sig, "rd_1.0.0_linux_arm64", b)
	require.NoError(t, err)
	_, err = registry.VerifyDownload(keys, doc, sig, "rd_1.0.0_linux_arm64", a)
	require.ErrorContains(t, err, "refused", "the bytes of another platform")
	_, err = registry.VerifyDownload(keys, doc, sig, "rd_1.0.0_linux_riscv64", a)
	require.ErrorContains(t, err, "not in")
	_, err = registry.VerifyDownload(keys, doc, registry.Sign(priv, []byte("other")), "rd_1.0.0_linux_arm64", b)
	require.ErrorIs(t, err, registry.ErrBadSignature)
}

// Keys of small order are refused: for them one signature verifies every message.
func TestWeakKeysAreRefused(t *testing.T) {
	identity := make([]byte, 32)
	identity[0] = 1
	for _, weak := range [][]byte{identity, make([]byte, 32)} {
		_, err := registry.ParsePublicKey(registry.PublicKey(weak).String())
		require.ErrorContains(t, err, "small order")
		// The identity's forgery: R the identity, S zero.
		forged := append(append([]byte{}, identity...), make([]byte, 32)...)
		_, err = registry.Verify([]registry.PublicKey{weak}, []byte("any sums"), forged)
		require.ErrorIs(t, err, registry.ErrBadSignature)
	}
}

// A key's proof binds it to one namespace.
func TestAKeyProofBindsTheKeyToItsNamespace(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	proof := registry.ProveKey(priv, "acme")
	require.NoError(t, registry.VerifyKeyProof(registry.PublicKey(pub), "acme", proof))
	require.ErrorIs(t, registry.VerifyKeyProof(registry.PublicKey(pub), "bobns", proof), registry.ErrNoKeyProof)
	other, _, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	require.ErrorIs(t, registry.VerifyKeyProof(registry.PublicKey(other), "acme", proof), registry.ErrNoKeyProof)
}

// A real executable passes: this test's own binary, of the machine it runs on.
func TestARealExecutableIsAnArtifact(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	f, err := os.Open(exe)
	require.NoError(t, err)
	defer f.Close()
	st, err := f.Stat()
	require.NoError(t, err)
	head := make([]byte, registry.ELFHead)
	n, _ := io.ReadFull(f, head)
	require.NoError(t, registry.SniffELF(head[:n], st.Size(), runtime.GOARCH))
}

// A reserved name is one of the list, or holds one of the product's words among its
// hyphen-separated words, so that its near variants are reserved too; the operator's own names
// are reserved as they are written, and only those.
func TestReservedNamesCoverTheirVariants(t *testing.T) {
	extra := []string{"acme-corp"}
	for _, name := range []string{
		"barrage", "api", "v1", "www", // the list
		"barrage-official", "official-plugins", "barrage-load", "acme-verified", "support-team",
		"the-admin", "security-x", "staff-picks",
		"acme-corp", // the operator's
	} {
		require.True(t, registry.Reserved(name, extra), name)
	}
	for _, name := range []string{
		"acme", "random-data", "barrages", "officially", "adminx", "api-tools", "my-docs", "v1-plugins",
		"acme-corp-eu", "corp", // the operator's names match exactly
	} {
		require.False(t, registry.Reserved(name, extra), name)
	}
}
