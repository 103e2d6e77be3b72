// Projects: what a team shares. The list of one's projects with the invitations waiting for an
// answer, and a project's page: its members and their roles, invitations, and for owners the
// changes only they may make. Licenses stay personal: a run counts against whoever starts it.
import { useState } from "preact/hooks";
import { call, type Project, type ProjectDetail, type ProjectInvitation, type ProjectRole, type User } from "../api";
import { Link, navigate, useTitle } from "../nav";
import { Badge, Failure, Field, Section, Select, Table, date, fieldError, useAction, useLoad, useSubmit } from "../ui";

const roles: [ProjectRole, string][] = [
  ["viewer", "viewer: reads everything"],
  ["runner", "runner: starts and cancels runs"],
  ["editor", "editor: writes tests, agents, targets, secrets"],
  ["owner", "owner: members, settings, delete"],
];

/** projectName is how a project reads in a list: its name, the personal one said so (unless its
 * name says it already). */
export function projectName(p: Project): string {
  return p.personal && p.name !== "Personal" ? `${p.name} (personal)` : p.name;
}

/** ProjectFilter chooses one of the user's projects, or all of them, when they have more than one. */
export function ProjectFilter(props: { projects?: Project[]; value: string; onChange: (v: string) => void }) {
  if (!props.projects || props.projects.length < 2) return null;
  return <Select label="Project" value={props.value} onChange={props.onChange}
    options={[["", "All your projects"], ...props.projects.map((p): [string, string] => [p.id, projectName(p)])]} />;
}

/** ProjectsPage lists the user's projects, makes new ones, and answers invitations. */
export function ProjectsPage() {
  useTitle("Projects");
  const projects = useLoad(() => call<{ items: Project[] }>("GET", "/v1/projects"), []);
  const invitations = useLoad(() => call<{ items: ProjectInvitation[] }>("GET", "/v1/me/invitations"), []);
  const [name, setName] = useState("");
  const create = useSubmit(async () => {
    const p = await call<Project>("POST", "/v1/projects", { name: name.trim() });
    navigate(`/projects/${p.id}`);
  });
  const answering = useAction();
  const answer = answering.act(async (inv: ProjectInvitation, accept: boolean) => {
    await call("POST", `/v1/me/invitations/${inv.id}/${accept ? "accept" : "decline"}`);
    invitations.reload();
    projects.reload();
  });
  return (
    <main>
      <h1>Projects</h1>
      <p class="hint">
        A project holds tests, runs, private agents, targets and secrets that its members share, each with a role.
        Your personal project is yours alone; make a project to share. Runs count against the license of whoever starts them.
      </p>
      {invitations.data && invitations.data.items.length > 0 && (
        <Section title="Invitations waiting for you">
          <Failure error={answering.error} />
          <Table caption="Invitations waiting for your answer" cols={["Project", "Role", "Sent", ""]}>
            {invitations.data.items.map((inv) => (
              <tr key={inv.id}>
                <td>{inv.project_name}</td>
                <td>{inv.role}</td>
                <td>{date(inv.created_at)}</td>
                <td>
                  <button type="button" class="small" aria-label={`Accept the invitation to ${inv.project_name}`} onClick={() => answer(inv, true)}>Accept</button>{" "}
                  <button type="button" class="secondary small" aria-label={`Decline the invitation to ${inv.project_name}`} onClick={() => answer(inv, false)}>Decline</button>
                </td>
              </tr>
            ))}
          </Table>
        </Section>
      )}
      <Failure error={projects.error ?? invitations.error} />
      {projects.data && (
        <Table caption="Your projects" cols={["Project", "Your role", "Members"]}>
          {projects.data.items.map((p) => (
            <tr key={p.id}>
              <td><Link href={`/projects/${p.id}`}>{p.name}</Link>{p.personal && <> <Badge tone="neutral">personal</Badge></>}</td>
              <td>{p.role}</td>
              <td class="n">{p.members}</td>
            </tr>
          ))}
        </Table>
      )}
      <Section title="Make a project">
        <form onSubmit={create.submit}>
          <Field label="Project name" value={name} required maxLength={100} error={fieldError(create.error, "name")}
            onInput={(e) => setName((e.target as HTMLInputElement).value)} />
          <Failure error={fieldError(create.error, "name") ? null : create.error} />
          <button type="submit" disabled={create.busy}>Make it</button>
        </form>
      </Section>
    </main>
  );
}

/** ProjectPage is one project: its members, and for its owners, invitations and changes. */
export function ProjectPage(props: { id: string; user: User }) {
  const project = useLoad(() => call<ProjectDetail>("GET", `/v1/projects/${props.id}`), [props.id]);
  useTitle(project.data ? `Project ${project.data.name}` : "Project");
  const p = project.data;
  if (project.error) return <main><h1>Project</h1><Failure error={project.error} /></main>;
  if (!p) return <main aria-busy="true" />;
  const owner = p.role === "owner";
  return (
    <main class="wide">
      <h1>{p.name}</h1>
      <p class="hint">
        You are {p.role === "owner" ? "an" : "a"} {p.role} here.{p.personal && " This is your personal project."}{" "}
        <Link href={`/tests?project=${p.id}`}>Its tests</Link> · <Link href={`/runs?project=${p.id}`}>its runs</Link>
      </p>
      <Members project={p} user={props.user} onChange={project.set} reload={project.reload} />
      {owner && !p.personal && <Invitations project={p} />}
      {owner && !p.personal && <Settings project={p} onChange={project.reload} />}
    </main>
  );
}

function Members(props: { project: ProjectDetail; user: User; onChange: (p: ProjectDetail) => void; reload: () => void }) {
  const p = props.project;
  const owner = p.role === "owner";
  const owners = p.member_list.filter((m) => m.role === "owner").length; // the last stays
  const acting = useAction();
  const setRole = acting.act(async (user: string, role: string) => {
    props.onChange(await call<ProjectDetail>("PATCH", `/v1/projects/${p.id}/members/${user}`, { role }));
  });
  const remove = acting.act(async (user: string) => {
    await call("DELETE", `/v1/projects/${p.id}/members/${user}`);
    if (user === props.user.id) navigate("/projects");
    else props.reload();
  });
  return (
    <Section title="Members">
      <Failure error={acting.error} />
      <Table caption={`The members of ${p.name}`} cols={["Member", "Role", "Since", ""]}>
        {p.member_list.map((m) => (
          <tr key={m.user_id}>
            <td>{m.name} &lt;{m.email}&gt;{m.user_id === props.user.id && " (you)"}</td>
            <td>
              {owner ? (
                <select aria-label={`Role of ${m.email}`} value={m.role} onChange={(e) => setRole(m.user_id, (e.target as HTMLSelectElement).value)}>
                  {roles.map(([v]) => <option key={v} value={v}>{v}</option>)}
                </select>
              ) : m.role}
            </td>
            <td>{date(m.added_at)}</td>
            <td>
              {(owner || m.user_id === props.user.id) && !(p.personal && m.user_id === props.user.id) && !(m.role === "owner" && owners === 1) && (
                <button type="button" class="secondary small" aria-label={m.user_id === props.user.id ? "Leave the project" : `Remove ${m.email}`}
                  onClick={() => remove(m.user_id)}>{m.user_id === props.user.id ? "Leave" : "Remove"}</button>
              )}
            </td>
          </tr>
        ))}
      </Table>
      <p class="hint">The last owner stays. What a member made stays in the project when they leave; their runs say who started them.</p>
    </Section>
  );
}

function Invitations(props: { project: ProjectDetail }) {
  const p = props.project;
  const sent = useLoad(() => call<{ items: ProjectInvitation[] }>("GET", `/v1/projects/${p.id}/invitations`), [p.id]);
  const [who, setWho] = useState("");
  const [role, setRole] = useState<string>("viewer");
  const invite = useSubmit(async () => {
    const w = who.trim();
    const byID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(w);
    await call("POST", `/v1/projects/${p.id}/invitations`, byID ? { user_id: w, role } : { email: w, role });
    setWho("");
    sent.reload();
  });
  const withdrawing = useAction();
  const withdraw = withdrawing.act(async (id: string) => {
    await call("DELETE", `/v1/projects/${p.id}/invitations/${id}`);
    sent.reload();
  });
  return (
    <Section title="Invite">
      <form onSubmit={invite.submit}>
        <Field label="Email or user id" value={who} required error={fieldError(invite.error, "email") ?? fieldError(invite.error, "user_id")}
          hint="Someone with an account here: people sign up with an invitation code from an admin, each with their own license."
          onInput={(e) => setWho((e.target as HTMLInputElement).value)} />
        <Select label="Role" value={role} options={roles} onChange={setRole} />
        <Failure error={fieldError(invite.error, "email") || fieldError(invite.error, "user_id") ? null : invite.error} />
        <button type="submit" disabled={invite.busy}>Invite</button>
      </form>
      <Failure error={sent.error ?? withdrawing.error} />
      {sent.data && sent.data.items.length > 0 && (
        <Table caption="Invitations waiting for an answer" cols={["Invited", "Role", "Sent", ""]}>
          {sent.data.items.map((inv) => (
            <tr key={inv.id}>
              <td>{inv.email}</td>
              <td>{inv.role}</td>
              <td>{date(inv.created_at)}</td>
              <td><button type="button" class="secondary small" aria-label={`Withdraw the invitation of ${inv.email}`} onClick={() => withdraw(inv.id)}>Withdraw</button></td>
            </tr>
          ))}
        </Table>
      )}
    </Section>
  );
}

function Settings(props: { project: ProjectDetail; onChange: () => void }) {
  const p = props.project;
  const [name, setName] = useState(p.name);
  const rename = useSubmit(async () => {
    await call("PATCH", `/v1/projects/${p.id}`, { name: name.trim() });
    props.onChange();
  });
  const del = useSubmit(async () => {
    if (!confirm(`Delete ${p.name} with its tests, scripts, runs, agents, targets and secrets?`)) return;
    await call("DELETE", `/v1/projects/${p.id}`);
    navigate("/projects");
  });
  return (
    <Section title="Settings">
      <form onSubmit={rename.submit} class="inline">
        <Field label="Name" value={name} required maxLength={100} error={fieldError(rename.error, "name")}
          onInput={(e) => setName((e.target as HTMLInputElement).value)} />
        <button type="submit" disabled={rename.busy}>Rename</button>
      </form>
      <form onSubmit={del.submit}>
        <p class="hint">Deleting the project deletes all it holds. A project with a run going on cannot be deleted.</p>
        <Failure error={del.error} />
        <button type="submit" class="danger" disabled={del.busy}>Delete the project</button>
      </form>
    </Section>
  );
}
