# Reference implementation of comms_id (see CommsId.java / records.proto) that writes the test vectors:
#   python3 proto/src/test/python/comms_id_reference.py > proto/src/test/resources/comms_id_vectors.json
import json, struct
P=0x100000001b3; B=0xcbf29ce484222325; M=(1<<64)-1
def fnv(bs):
    h=B
    for b in bs: h=((h^b)*P)&M
    return h
def layout(ranks):
    s=sorted(ranks)
    if len(s)==1: return s[0],1,1
    st=s[1]-s[0]
    if all(s[i]-s[i-1]==st for i in range(1,len(s))): return s[0],st,len(s)
    d=fnv(b''.join(struct.pack('<q',r) for r in s))
    return struct.unpack('<q',struct.pack('<Q',d))[0],0,len(s)
def cid(name,seq,p2p,start,stride,size):
    n=name.encode('utf-8')
    return fnv(struct.pack('<I',len(n))+n+struct.pack('<q',seq)+bytes([1 if p2p else 0])+struct.pack('<qqq',start,stride,size))
cases=[("0",1,False,list(range(8))),("0",0,False,[0]),("default_pg",42,False,list(range(16))),
 ("tp",7,False,[8,9,10,11]),("dp",3,False,[1,5,9,13]),("pp",12,True,[3,11]),("pp",12,False,[3,11]),
 ("split",5,False,[0,1,3]),("split",5,False,[0,2,3]),("größe",9,False,[2]),("",2**40,True,[4,6,8]),
 ("43",123456789,False,list(range(0,16384,1))),("ep",1,False,[15,7,11,3])]
out=[]
for name,seq,p2p,ranks in cases:
    st,sd,sz=layout(ranks)
    out.append({"pg_name":name,"seq":seq,"is_p2p":p2p,"ranks":ranks if len(ranks)<=32 else {"range":[0,len(ranks)]},
      "global_rank_start":st,"global_rank_stride":sd,"world_size":sz,"comms_id":"%016x"%cid(name,seq,p2p,st,sd,sz)})
if __name__ == "__main__":
    print(json.dumps({"about":"comms_id test vectors, computed by proto/src/test/python/comms_id_reference.py, an implementation independent of the Java one; see CommsId and records.proto","vectors":out},indent=1,ensure_ascii=False))
