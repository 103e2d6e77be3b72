-- Marketplace plugins in runs (issue 12).

-- The marketplace plugins a job's test uses, as the server resolved them when the job was asked
-- for (PluginPin JSON): the agent fetches them by digest and verifies their signature.
ALTER TABLE agent_jobs ADD COLUMN plugins jsonb NOT NULL DEFAULT '[]';

-- Whether the agent's plugin host holds the whole kernel sandbox, as it said when it last asked
-- for work: shared agents without it run only the marketplace plugins that admins published.
ALTER TABLE agents ADD COLUMN sandbox boolean NOT NULL DEFAULT false;
