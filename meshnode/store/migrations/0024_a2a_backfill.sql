-- Migration 0022 backfilled every note this node wrote with source "user" as the person's. The A2A face
-- also wrote "user" notes before then: a party's message, framed as "[A2A message from known party NAME]"
-- or "[A2A message from unknown party 'NAME' at ADDRESS]" on its first line. Those are an A2A party's,
-- not the person's: the agent must not read them as its person's words. (A person who typed such a line
-- themselves loses nothing but a label: the wrong way round would hand a stranger the person's voice.)
-- Their party's key was not recorded: the id is "earlier", the label the words of the frame.
UPDATE provenance
   SET kind = 'a2a', via = NULL, actor_id = 'earlier',
       label = substr(
           (SELECT substr(n.text, 19, instr(n.text, ']') - 19) FROM notes n WHERE n.container_did = provenance.container_did),
           1, 200)
 WHERE backfilled = 1 AND kind = 'person'
   AND container_did IN (SELECT n.container_did FROM notes n
                          WHERE n.source = 'user' AND n.text LIKE '[A2A message from %]%' AND instr(n.text, ']') > 19);
