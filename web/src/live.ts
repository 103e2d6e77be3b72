// Following a run live: its Server-Sent Events read with fetch, so that a blip in the network
// (or an expired session, renewed on the way) resumes after the last second seen, by
// Last-Event-ID, with neither a gap nor a second twice.
import { Problem, respond, type LiveSecond, type Run, type Shard } from "./api";

export interface LiveHandlers {
  second(s: LiveSecond): void;
  shard(s: Shard): void;
  state(r: Run): void;
  end(r: Run): void;
  /** connected says whether the stream is up; down with the reason it went. */
  connected(up: boolean, why?: string): void;
}

/** follow reads run id's live stream until the run ends or stop is called, reconnecting after
 * each break (1 s, doubling to 10 s). */
export function follow(id: string, h: LiveHandlers): () => void {
  const abort = new AbortController();
  let last = -1; // the index of the last second handled
  let ended = false;
  (async () => {
    let wait = 1000;
    while (!ended && !abort.signal.aborted) {
      try {
        const headers: Record<string, string> = { Accept: "text/event-stream" };
        if (last >= 0) headers["Last-Event-ID"] = String(last);
        const res = await respond("GET", `/v1/runs/${id}/live`, undefined, headers, abort.signal);
        h.connected(true);
        wait = 1000;
        await read(res, (event, data, eventID) => {
          const v = JSON.parse(data);
          switch (event) {
            case "second": {
              const idx = eventID !== "" ? Number(eventID) : v.index;
              if (idx <= last) return; // seen before the break
              last = idx;
              h.second(v as LiveSecond);
              break;
            }
            case "shard":
              h.shard(v as Shard);
              break;
            case "state":
              h.state(v as Run);
              break;
            case "end":
              ended = true;
              h.end(v as Run);
              break;
          }
        });
        if (!ended) h.connected(false, "the stream ended early; reconnecting");
      } catch (e) {
        if (abort.signal.aborted) return;
        if (e instanceof Problem && e.status >= 400 && e.status < 500 && e.status !== 429) {
          h.connected(false, e.detail || e.title);
          return; // not found, not allowed: trying again changes nothing
        }
        h.connected(false, "the connection broke; reconnecting");
      }
      if (ended || abort.signal.aborted) return;
      await new Promise((r) => setTimeout(r, wait));
      wait = Math.min(wait * 2, 10000);
    }
  })();
  return () => abort.abort();
}

/** read parses a text/event-stream body, calling each for every event (its name, its data and
 * its id) until the body ends. */
async function read(res: Response, each: (event: string, data: string, id: string) => void) {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  let event = "message";
  let data: string[] = [];
  let id = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let nl: number;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl).replace(/\r$/, "");
      buf = buf.slice(nl + 1);
      if (line === "") {
        if (data.length) each(event, data.join("\n"), id);
        event = "message";
        data = [];
        id = "";
      } else if (line.startsWith("event:")) event = line.slice(6).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      else if (line.startsWith("id:")) id = line.slice(3).trim();
    }
  }
}
