-- What a person was shown of each draft (SHA-256 of the content `meshnode
-- drafts list` displayed): accepting from the command line takes only a draft
-- whose content is still what was shown, so the agent cannot change a draft
-- between the person's review and their acceptance.
ALTER TABLE gate_drafts ADD COLUMN shown_sha256 TEXT;
