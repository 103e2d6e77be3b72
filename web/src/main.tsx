// The portal: a client of the public API, served by barrage serve at /. Pages are chosen by
// the path (the server answers index.html for every path of the portal); signing in sets the
// session's cookies, which no script here can read.
import { render, type ComponentChildren, type VNode } from "preact";
import { useEffect, useState } from "preact/hooks";
import { call, onSignedOut, type BrowserSession, type User } from "./api";
import { Link, navigate, onNavigate } from "./nav";
import { LicensePage, PasswordPage, TokensPage } from "./pages/account";
import { SignIn, SignUp } from "./pages/auth";
import { DebugPage } from "./pages/debug";
import { EditorPage } from "./pages/editor";
import { ImportPage } from "./pages/import";
import { AgentsPage, InvitationsPage, ReviewPage, TargetsPage, UserPage, UsersPage } from "./pages/admin";
import { LaunchPage } from "./pages/launch";
import { MarketPage, PluginPage } from "./pages/market";
import { NamespacePage, NamespacesPage } from "./pages/namespaces";
import { ProjectPage, ProjectsPage } from "./pages/projects";
import { ComparePage, RunPage } from "./pages/run";
import { RunsPage } from "./pages/runs";
import { Failure, useLoad } from "./ui";
import { TestPage, TestsPage } from "./pages/tests";

/** The main navigation's pages; a page under one of them marks it current. */
const sections: { path: string; title: string }[] = [
  { path: "/tests", title: "Tests" },
  { path: "/runs", title: "Runs" },
  { path: "/projects", title: "Projects" },
  { path: "/plugins", title: "Marketplace" },
  { path: "/namespaces", title: "Your plugins" },
  { path: "/license", title: "License" },
  { path: "/tokens", title: "API tokens" },
  { path: "/password", title: "Password" },
];

const uuid = "([0-9a-f-]{36})";
const slug = "([a-z](?:-?[a-z0-9])*)"; // a namespace's or a plugin's name

/** Wizard is the wizard's page, loaded when first opened: it brings a YAML library that no other
 * page needs. */
function Wizard(props: { id?: string }) {
  const page = useLoad(() => import("./pages/wizard"), []);
  if (page.error) return <main><h1>Wizard</h1><Failure error={page.error} /></main>;
  return page.data ? <page.data.WizardPage id={props.id} /> : <main aria-busy="true" />;
}

/** routes are the signed-in pages, by their path; the first that matches draws the page. */
const routes: { re: RegExp; page: (m: string[], q: URLSearchParams, user: User) => VNode }[] = [
  { re: /^\/tests$/, page: (_, q) => <TestsPage query={q} /> },
  { re: /^\/tests\/new$/, page: () => <EditorPage /> },
  { re: /^\/tests\/new\/wizard$/, page: () => <Wizard /> },
  { re: /^\/tests\/import$/, page: () => <ImportPage /> },
  { re: new RegExp(`^/tests/${uuid}$`), page: (m) => <TestPage id={m[1]} /> },
  { re: new RegExp(`^/tests/${uuid}/edit$`), page: (m) => <EditorPage id={m[1]} /> },
  { re: new RegExp(`^/tests/${uuid}/wizard$`), page: (m) => <Wizard id={m[1]} /> },
  { re: new RegExp(`^/tests/${uuid}/debug$`), page: (m) => <DebugPage id={m[1]} /> },
  { re: new RegExp(`^/tests/${uuid}/run$`), page: (m) => <LaunchPage id={m[1]} /> },
  { re: /^\/runs$/, page: (_, q) => <RunsPage query={q} /> },
  { re: new RegExp(`^/runs/${uuid}$`), page: (m) => <RunPage id={m[1]} /> },
  { re: new RegExp(`^/runs/${uuid}/compare$`), page: (m, q) => <ComparePage id={m[1]} base={q.get("base") ?? ""} /> },
  { re: /^\/plugins$/, page: (_, q) => <MarketPage query={q} /> },
  { re: new RegExp(`^/plugins/${slug}/${slug}$`), page: (m, _, user) => <PluginPage namespace={m[1]} name={m[2]} user={user} /> },
  { re: /^\/namespaces$/, page: () => <NamespacesPage /> },
  { re: new RegExp(`^/namespaces/${slug}$`), page: (m, _, user) => <NamespacePage name={m[1]} user={user} /> },
  { re: /^\/admin$/, page: () => <Redirect to="/admin/invitations" /> },
  { re: /^\/admin\/invitations$/, page: () => <InvitationsPage /> },
  { re: /^\/admin\/users$/, page: (_, q) => <UsersPage query={q} /> },
  { re: new RegExp(`^/admin/users/${uuid}$`), page: (m, _, user) => <UserPage id={m[1]} me={user} /> },
  { re: /^\/admin\/agents$/, page: () => <AgentsPage /> },
  { re: /^\/admin\/plugins$/, page: () => <ReviewPage /> },
  { re: /^\/admin\/targets$/, page: () => <TargetsPage /> },
  { re: /^\/projects$/, page: () => <ProjectsPage /> },
  { re: new RegExp(`^/projects/${uuid}$`), page: (m, _, user) => <ProjectPage id={m[1]} user={user} /> },
  { re: /^\/tokens$/, page: () => <TokensPage /> },
  { re: /^\/license$/, page: (_, __, user) => <LicensePage user={user} /> },
];

/** Notice is a page that says one thing: none here, or none for this user. */
function Notice(props: { title: string; children: ComponentChildren }) {
  useEffect(() => {
    document.title = `${props.title} · Barrage`;
  }, [props.title]);
  return (
    <main>
      <h1>{props.title}</h1>
      <p>{props.children}</p>
    </main>
  );
}

const NotFound = () => <Notice title="Not found">The portal has no page here. <Link href="/tests">Your tests</Link></Notice>;

const AdminsOnly = () => <Notice title="Admins only">This page is for the service's admins. <Link href="/tests">Your tests</Link></Notice>;

/** Redirect moves to another page in place of this one, as a server's redirect would. */
function Redirect(props: { to: string }) {
  useEffect(() => navigate(props.to, true), [props.to]);
  return <main aria-busy="true" />;
}

function App() {
  const [where, setWhere] = useState(location.pathname + location.search);
  const [user, setUser] = useState<User | null | undefined>(undefined); // undefined: not known yet
  useEffect(() => {
    const back = () => setWhere(location.pathname + location.search);
    addEventListener("popstate", back);
    onNavigate(setWhere);
    onSignedOut(() => setUser(null));
    call<User>("GET", "/v1/me").then(setUser, () => setUser(null));
    return () => removeEventListener("popstate", back);
  }, []);
  const url = new URL(where, location.origin);
  const path = url.pathname;
  useEffect(() => {
    if (user === null) document.title = `${path === "/signup" ? "Sign up" : "Sign in"} · Barrage`;
  }, [path, user]);

  if (user === undefined) return <main aria-busy="true" />;
  const signedIn = (s: BrowserSession) => setUser(s.user); // on the page asked for, or the tests
  if (user === null) {
    const go = (to: string) => navigate(to);
    return path === "/signup" ? <SignUp onSignedIn={signedIn} go={go} /> : <SignIn onSignedIn={signedIn} go={go} />;
  }
  async function signOut() {
    try {
      await call("DELETE", "/v1/auth/session");
    } finally {
      setUser(null);
      navigate("/signin");
    }
  }
  if (path === "/" || path === "/signin" || path === "/signup") return <Redirect to="/tests" />; // a tester's first page
  let page: VNode | undefined;
  if (path === "/password") {
    page = <PasswordPage onChanged={() => { setUser(null); navigate("/signin"); }} />;
  }
  if (path === "/admin" || path.startsWith("/admin/")) {
    // The console is for admins; anyone else is shown no part of it (its routes refuse them).
    if (user.role !== "admin") page = <AdminsOnly />;
  }
  for (const r of routes) {
    if (page) break;
    const m = r.re.exec(path);
    if (m) page = r.page(m, url.searchParams, user);
  }
  // Admins see the console's section; anyone else would find its pages refused by the API.
  const shown = user.role === "admin" ? [...sections, { path: "/admin", title: "Admin" }] : sections;
  const current = shown.find((s) => path === s.path || path.startsWith(s.path + "/"));
  return (
    <>
      <a class="skip" href="#main">Skip to the page</a>
      <header>
        <nav aria-label="Main">
          <strong class="brand">Barrage</strong>
          {shown.map((s) => (
            <Link key={s.path} href={s.path} aria-current={s === current ? "page" : undefined}>
              {s.title}
            </Link>
          ))}
          <span class="who">{user.name}</span>
          <button type="button" class="secondary" onClick={signOut}>Sign out</button>
        </nav>
      </header>
      <div id="main" key={path}>{page ?? <NotFound />}</div>
    </>
  );
}

render(<App />, document.getElementById("app")!);
