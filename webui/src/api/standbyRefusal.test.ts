import { ApiError } from './errors';
import { standbyRefusals } from './standbyRefusal';

const refusal = new ApiError(409, { detail: 'this node is standby; make changes on the active node lb1 at https://10.0.0.1', code: 'standby_read_only', active_url: 'https://10.0.0.1' });

describe('standby refusals', () => {
  afterEach(() => standbyRefusals.dismiss());

  it('keeps the newest standby refusal and ignores other errors', () => {
    standbyRefusals.onError(new ApiError(409, { detail: 'a service named web exists already' }));
    expect(standbyRefusals.get()).toBeNull();
    standbyRefusals.onError(refusal);
    expect(standbyRefusals.get()?.activeUrl).toBe('https://10.0.0.1');
  });

  it('forgets it once an edit succeeds (the node became the writer) or it is dismissed', () => {
    standbyRefusals.onError(refusal);
    standbyRefusals.onSuccess();
    expect(standbyRefusals.get()).toBeNull();
    standbyRefusals.onError(refusal);
    standbyRefusals.dismiss();
    expect(standbyRefusals.get()).toBeNull();
  });
});
