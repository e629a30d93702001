-- Conversations the person controls (issue 34): a thread's own title, archived or deleted (a deleted
-- thread's notes are hidden too); an archived or deleted thread leaves the agent's prompt.
CREATE TABLE chat_threads (
    tid         TEXT PRIMARY KEY,
    title       TEXT,
    archived_ms INTEGER,
    deleted_ms  INTEGER,
    updated_ms  INTEGER NOT NULL
);

-- Which messages of a conversation (the person's, an A2A party's) the agent was shown, in how many
-- prompts the LLM answered: "seen by the agent" (distinct from "answered", a reply_to), and the
-- count after which an unanswered message is only a one-line reminder in the prompt.
CREATE TABLE chat_prompted (
    container_did TEXT PRIMARY KEY,
    first_tick    INTEGER NOT NULL,
    last_tick     INTEGER NOT NULL,
    times         INTEGER NOT NULL,
    first_ms      INTEGER NOT NULL,
    last_ms       INTEGER NOT NULL
);
