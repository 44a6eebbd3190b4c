/**
 * The handlers of `pin` and `unpin` (client/pins.ts). Input the workflow would refuse for its shape or size is
 * refused here, before anything is sent (exit 2); a pin over the budget only the workflow can refuse (exit 1, its
 * message naming the budget and the sizes).
 */
import { pinMessage, pinText, unpin as unpinAgent } from '../../client/pins.ts';
import { validatePinInput, validateUnpinInput } from '../../contract/pins.ts';
import { renderPin, renderUnpin } from '../render.ts';
import { waitOptions, withClient } from './connection.ts';
import { EXIT, UsageError } from './parse.ts';
import type { Invocation } from './parse.ts';

export async function pin({ args, values, out }: Invocation): Promise<number> {
  const agentId = args.agent!;
  const messageId = args.message;
  const text = values.text;
  if ((messageId === undefined) === (text === undefined)) {
    throw new UsageError('pin: give a message id or --text TEXT (one of them)');
  }
  validatePinInput(messageId !== undefined ? { messageId } : { text: text! }); // never sent when it would be refused
  const result = await withClient((client) =>
    messageId !== undefined
      ? pinMessage(client, agentId, messageId, waitOptions())
      : pinText(client, agentId, text!, waitOptions()),
  );
  out(values.json ? JSON.stringify(result) : renderPin(result));
  return EXIT.ok;
}

export async function unpin({ args, values, out }: Invocation): Promise<number> {
  const agentId = args.agent!;
  const pinId = args.pin!;
  validateUnpinInput({ pin: pinId });
  const result = await withClient((client) => unpinAgent(client, agentId, pinId, waitOptions()));
  out(values.json ? JSON.stringify(result) : renderUnpin(result));
  return EXIT.ok;
}
