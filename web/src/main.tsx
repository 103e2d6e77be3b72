// The portal: a client of the public API, served by barrage serve at /. Pages are chosen by
// the path (the server answers index.html for every path of the portal); signing in sets the
// session's cookies, which no script here can read.
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { call, onSignedOut, type BrowserSession, type User } from "./api";
import { LicensePage, PasswordPage, TokensPage } from "./pages/account";
import { SignIn, SignUp } from "./pages/auth";

const pages: { path: string; title: string }[] = [
  { path: "/", title: "License" },
  { path: "/tokens", title: "API tokens" },
  { path: "/password", title: "Password" },
];

function App() {
  const [path, setPath] = useState(location.pathname);
  const [user, setUser] = useState<User | null | undefined>(undefined); // undefined: not known yet
  const go = (to: string) => {
    if (to !== location.pathname) history.pushState(null, "", to);
    setPath(to);
  };
  useEffect(() => {
    const back = () => setPath(location.pathname);
    addEventListener("popstate", back);
    onSignedOut(() => setUser(null));
    call<User>("GET", "/v1/me").then(setUser, () => setUser(null));
    return () => removeEventListener("popstate", back);
  }, []);
  useEffect(() => {
    const page = pages.find((p) => p.path === path);
    const title = user === null ? (path === "/signup" ? "Sign up" : "Sign in") : page?.title;
    document.title = title ? `${title} · Barrage` : "Barrage";
  }, [path, user]);

  if (user === undefined) return <main aria-busy="true" />;
  const signedIn = (s: BrowserSession) => {
    setUser(s.user);
    go("/");
  };
  if (user === null) {
    return path === "/signup" ? <SignUp onSignedIn={signedIn} go={go} /> : <SignIn onSignedIn={signedIn} go={go} />;
  }
  async function signOut() {
    try {
      await call("DELETE", "/v1/auth/session");
    } finally {
      setUser(null);
      go("/signin");
    }
  }
  let page;
  switch (path) {
    case "/tokens":
      page = <TokensPage />;
      break;
    case "/password":
      page = <PasswordPage onChanged={() => { setUser(null); go("/signin"); }} />;
      break;
    default:
      page = <LicensePage user={user} />;
  }
  return (
    <>
      <header>
        <nav aria-label="Main">
          <strong class="brand">Barrage</strong>
          {pages.map((p) => (
            <a key={p.path} href={p.path} aria-current={p.path === path ? "page" : undefined}
              onClick={(e) => { e.preventDefault(); go(p.path); }}>
              {p.title}
            </a>
          ))}
          <span class="who">{user.name}</span>
          <button type="button" class="secondary" onClick={signOut}>Sign out</button>
        </nav>
      </header>
      {page}
    </>
  );
}

render(<App />, document.getElementById("app")!);
