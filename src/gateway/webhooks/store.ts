/**
 * The webhooks' records in `<P>_WEBHOOKS`: accounts' secrets and default endpoints, each task's
 * delivery (queued with its webhook-id as message id) and its state. Writes that depend on what
 * they read (a rotation, turning a default off) are conditional on the subject's last sequence.
 */
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import { confirmedAck } from '../../protocol/index.js';
import type { StoreNames } from '../store/streams.js';
import { WriteConflict, readLast, writeIf, type Versioned } from '../store/subject-store.js';
import type { TaskRecord } from '../store/records.js';
import { newWebhookSecret } from './signing.js';
import {
  ROTATION_OVERLAP_MS,
  awaitingFirstAttempt,
  webhookAccountSchema,
  webhookEvent,
  webhookId,
  webhookStateSchema,
  wantsWebhook,
  type DeliveryMessage,
  type WebhookAccount,
  type WebhookState,
} from './records.js';

export class WebhookStore {
  constructor(
    private readonly jsm: JetStreamManager,
    private readonly js: JetStreamClient,
    private readonly names: StoreNames,
  ) {}

  account(accountId: string): Promise<Versioned<WebhookAccount> | null> {
    return readLast(
      this.jsm,
      this.names.webhooksStream,
      this.names.webhookAccountSubject(accountId),
      webhookAccountSchema,
    );
  }

  /**
   * A new secret for the account, returned once. Without `rotate` only for an account that has
   * none; with it, the replaced secret keeps signing for ROTATION_OVERLAP_MS.
   */
  async newSecret(
    accountId: string,
    rotate: boolean,
    nowMs = Date.now(),
  ): Promise<{ secret: string; previousUntil?: string } | { exists: true }> {
    let made: { secret: string; previousUntil?: string } | { exists: true } = { exists: true };
    await this.write(accountId, (current) => {
      if (current !== null && !rotate) return null;
      const secret = newWebhookSecret();
      if (current === null) {
        made = { secret };
        return { secret };
      }
      const { previousSecret: _p, previousUntil: _u, ...kept } = current;
      const previousUntil = new Date(nowMs + ROTATION_OVERLAP_MS).toISOString();
      made = { secret, previousUntil };
      return { ...kept, secret, previousSecret: current.secret, previousUntil };
    });
    return made;
  }

  /** Sets (or, with null, removes) the account's default endpoint; false when it has no secret yet. */
  async setDefaultUrl(accountId: string, url: string | null): Promise<boolean> {
    return this.write(accountId, (current) => {
      if (current === null) return null;
      const { defaultUrl: _d, defaultOffAt: _o, ...kept } = current;
      return url === null ? kept : { ...kept, defaultUrl: url };
    });
  }

  /** After a 410 from the default endpoint: off, unless the account has set another one since. */
  async turnDefaultOff(accountId: string, url: string, at: string): Promise<void> {
    await this.write(accountId, (current) =>
      current?.defaultUrl === url && current.defaultOffAt === undefined ? { ...current, defaultOffAt: at } : null,
    );
  }

  /**
   * `change` returns the next record (from the current one, null when none), or null to leave it;
   * run again when another writer got in between. Returns whether a record was written.
   */
  private async write(
    accountId: string,
    change: (current: WebhookAccount | null) => WebhookAccount | null,
  ): Promise<boolean> {
    for (;;) {
      const current = await this.account(accountId);
      const next = change(current?.value ?? null);
      if (next === null) return false;
      try {
        await writeIf(this.js, this.names.webhookAccountSubject(accountId), next, current?.seq ?? 0);
        return true;
      } catch (err) {
        if (!(err instanceof WriteConflict)) throw err;
      }
    }
  }

  async state(taskId: string): Promise<WebhookState | null> {
    return (
      (await readLast(this.jsm, this.names.webhooksStream, this.names.webhookStateSubject(taskId), webhookStateSchema))
        ?.value ?? null
    );
  }

  async putState(taskId: string, state: WebhookState): Promise<void> {
    confirmedAck(
      await this.js.publish(this.names.webhookStateSubject(taskId), JSON.stringify(state)),
      this.names.webhookStateSubject(taskId),
    );
  }

  /**
   * Queues the webhook of a task settled as `task` says (it may not be stored yet), if it asked for
   * one. Sent again (an event redelivered, a settle retried), the message id makes it a duplicate,
   * and a delivery already under way (it has a state of this webhook-id) is not queued twice.
   * `again`: a retry asked over the API: queued again (replacing a delivery still waiting), unless
   * the webhook is already queued and not yet tried (awaitingFirstAttempt).
   */
  async enqueue(task: TaskRecord, again = false, nowMs = Date.now()): Promise<DeliveryMessage | null> {
    const event = webhookEvent(task);
    if (event === null || !wantsWebhook(task)) return null;
    const message: DeliveryMessage = {
      webhookId: webhookId(task.id, event),
      taskId: task.id,
      accountId: task.accountId,
      event,
    };
    const subject = this.names.webhookQueueSubject(task.id);
    const queue = async (options: { msgID?: string }) =>
      confirmedAck(await this.js.publish(subject, JSON.stringify(message), options), subject);
    const due = new Date(nowMs).toISOString();
    if (again) {
      const previous = await this.state(task.id);
      // Queued and not yet tried: its request may be under way, and a second copy would be a second
      // request at once (a storm of retries, several at a time to any URL). Nothing to add.
      if (previous !== null && awaitingFirstAttempt(previous, message.webhookId, nowMs)) return message;
      // The state first: the delivery, once queued, writes its own. The count starts over with the schedule.
      await this.putState(task.id, {
        id: message.webhookId,
        event,
        status: 'pending',
        attempts: 0,
        nextAttemptAt: due,
        ...(previous?.lastResponse === undefined ? {} : { lastResponse: previous.lastResponse }),
      });
      await queue({});
      return message;
    }
    const state = await this.state(task.id);
    if (state?.id === message.webhookId) return message;
    // Queued first, so a crash in between leaves no state and the next try queues it (a duplicate
    // within the window, dropped by the server); then the first state, unless the delivery has
    // written one already. A state of another event (a settle that lost its race) is replaced, and
    // its delivery too: under an id of its own, since this one's may have been replaced before.
    await queue({ msgID: state === null ? message.webhookId : `${message.webhookId}:after:${state.id}` });
    const first: WebhookState = { id: message.webhookId, event, status: 'pending', attempts: 0, nextAttemptAt: due };
    if (state !== null) await this.putState(task.id, first);
    else {
      await writeIf(this.js, this.names.webhookStateSubject(task.id), first, 0).catch((err: unknown) => {
        if (!(err instanceof WriteConflict)) throw err;
      });
    }
    return message;
  }
}
